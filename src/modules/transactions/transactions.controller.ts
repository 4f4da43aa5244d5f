import { Controller, HttpCode, Param, Post, UseGuards } from '@nestjs/common';
import { IdOnlyBody } from '../../common/request-schemas';
import { ValidBody } from '../../common/validation/zod-validation.pipe';
import { CatalogAccessGuard } from '../auth/catalog-access.guard';
import { DatabaseThrottlerGuard } from '../throttling/database-throttler.guard';
import { Tenant, TenantContext } from '../tenancy/tenant-context';
import { TransactionsService } from './transactions.service';

@Controller('v1/transaction')
@UseGuards(CatalogAccessGuard, DatabaseThrottlerGuard)
export class TransactionsController {
  constructor(private readonly transactions: TransactionsService) {}

  /** `{id}` is the transaction id as returned by a long-running operation (not split by the delimiter). */
  @Post(':id/describe')
  @HttpCode(200)
  describe(@Tenant() t: TenantContext, @Param('id') id: string, @ValidBody(IdOnlyBody) _body: unknown) {
    return this.transactions.describe(t.database.id, id);
  }
}
