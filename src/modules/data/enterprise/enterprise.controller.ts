import { Controller, Get, Param, Post } from '@nestjs/common';
import { z } from 'zod';
import { assertName } from '../../../platform/http/ids';
import { ListTablesQuery, ListTablesResponse, TablesService } from '../../catalog';
import { Delimiter } from '../../../platform/http/route-params';
import { ValidQuery } from '../../../platform/http/validation/zod-validation.pipe';
import { Audited } from '../../audit';
import { ARROW_ERRORS, CATALOG_ERRORS, Operation } from '../../../platform/http/operation.decorator';
import { Tenant, TenantContext } from '../../identity';
import { ArrowStream } from '../arrow-body';
import { EnterpriseCreateTableResponse } from '../writes/table-writes.schemas';
import { TableWritesService } from '../writes/table-writes.service';

/** The extended edition's routes (docs/rest-contract.md §4.7): list tables, create a table from a streamed Arrow body. */
@Controller('v1/tables')
export class EnterpriseController {
  constructor(
    private readonly tables: TablesService,
    private readonly writes: TableWritesService,
  ) {}

  /** Like §4.6: every table of the database as full identifiers, keyset-paginated. */
  @Get()
  @Operation({
    operationId: 'EnterpriseListTables',
    summary: 'List all tables (Enterprise)',
    description: 'Same answer as ListAllTables.',
    tag: 'Enterprise',
    access: 'catalog',
    needs: { privilege: 'describe', on: 'listing' },
    responses: { 200: { description: 'Table identifiers', schema: ListTablesResponse } },
    errors: CATALOG_ERRORS,
  })
  list(@Tenant() t: TenantContext, @Delimiter() delimiter: string, @ValidQuery(ListTablesQuery) q: z.output<typeof ListTablesQuery>) {
    return this.tables.listAll(t, delimiter, q, q.include_declared);
  }

  /** 201 with the new table; 409 when the name exists; 400 for a bad body; 413 above the limit. */
  @Post(':name')
  @Operation({
    operationId: 'EnterpriseCreateTable',
    summary: 'Create a table from an Arrow stream (Enterprise)',
    description: 'Streams the body into a new table in the root namespace; 409 when the name exists, 413 above the limit.',
    tag: 'Enterprise',
    access: 'catalog',
    needs: { privilege: 'create', on: 'table', creates: true },
    pathParams: { name: { description: 'Table name (letters, digits, `_`, `-`, `.`).' } },
    responses: { 201: { description: 'Created', schema: EnterpriseCreateTableResponse } },
    errors: ARROW_ERRORS,
  })
  @Audited('table.create')
  create(
    @Tenant() t: TenantContext,
    @Param('name') name: string,
    @ArrowStream('The rows, as an Arrow IPC stream.') rows: AsyncIterable<Buffer>,
  ) {
    assertName(name, 'table name');
    return this.writes.createStreamed(t, [name], rows, 'spec');
  }
}
