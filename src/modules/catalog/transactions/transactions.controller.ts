import { Controller, Param, Post } from '@nestjs/common';
import { IdOnlyBody } from '../catalog.schemas';
import { DescribeTransactionResponse } from './transactions.schemas';
import { ValidBody } from '../../../platform/http/validation/zod-validation.pipe';
import { CATALOG_ERRORS, Operation } from '../../../platform/http/operation.decorator';
import { Tenant, TenantContext } from '../../identity';
import { TransactionsService } from './transactions.service';

@Controller('v1/transaction')
export class TransactionsController {
  constructor(private readonly transactions: TransactionsService) {}

  /** `{id}` is the transaction id as returned by a long-running operation (not split by the delimiter). */
  @Post(':id/describe')
  @Operation({
    operationId: 'DescribeTransaction',
    summary: 'Describe information about a transaction',
    description: 'Status of a long-running operation (a cascade drop) by the `transaction_id` it answered.',
    tag: 'Transaction',
    access: 'catalog',
    needs: { privilege: 'describe', on: 'database' },
    pathParams: { id: { description: 'The transaction id, as answered (not split by `delimiter`).' } },
    responses: { 200: { description: 'The transaction', schema: DescribeTransactionResponse } },
    errors: CATALOG_ERRORS,
  })
  describe(@Tenant() t: TenantContext, @Param('id') id: string, @ValidBody(IdOnlyBody) _body: unknown) {
    return this.transactions.describe(t.database.id, id);
  }

  /** Never changes anything: 404 (code 10) for an unknown transaction, else 406 (code 0) saying why. */
  @Post(':id/alter')
  @Operation({
    operationId: 'AlterTransaction',
    summary: 'Alter information of a transaction.',
    description:
      'Not supported: the only transactions here are the storage clean-ups of cascade drops, whose catalog change ' +
      'is already committed; they cannot be aborted or given properties. 404 (code 10) for an unknown transaction, ' +
      'else 406 (code 0).',
    tag: 'Transaction',
    access: 'catalog',
    needs: { privilege: 'manage', on: 'database' },
    pathParams: { id: { description: 'The transaction id, as answered (not split by `delimiter`).' } },
    responses: { 200: { description: 'Never answered: always 406 (code 0) or 404' } },
    errors: [400, 401, 403, 404, 406, 503, '5XX'],
  })
  alter(@Tenant() t: TenantContext, @Param('id') id: string) {
    return this.transactions.alter(t.database.id, id);
  }
}
