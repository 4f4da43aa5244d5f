import { Controller, Post } from '@nestjs/common';
import { z } from 'zod';
import { DescribeTableVersionResponse, ListTableVersionsResponse } from '../../catalog';
import { ObjectId } from '../../../platform/http/route-params';
import { ValidBody, ValidQuery } from '../../../platform/http/validation/zod-validation.pipe';
import { Audited } from '../../audit';
import { CATALOG_ERRORS, Operation, WITH_CONFLICT } from '../../../platform/http/operation.decorator';
import { Tenant, TenantContext } from '../../identity';
import { JobIdResponse } from '../../jobs';
import { VersionBody } from '../dataplane.schemas';
import { TableJobsService } from '../jobs/table-jobs.service';
import {
  AddColumnsBody,
  AlterColumnsBody,
  BackfillColumnBody,
  DescribeVersionBody,
  DropColumnsBody,
  ListVersionsQuery,
  VersionResponse,
} from './table-schema.schemas';
import { TableSchemaService } from './table-schema.service';

/** The versions of a table (list, describe, restore) and its columns (add, backfill, alter, drop). */
@Controller('v1')
export class TableSchemaController {
  constructor(
    private readonly schema: TableSchemaService,
    private readonly tableJobs: TableJobsService,
  ) {}

  @Post('table/:id/version/list')
  @Operation({
    operationId: 'ListTableVersions',
    summary: 'List all versions of a table',
    description:
      'Every version of the table (of `branch`), oldest first, or newest first with `descending=true`; all of them ' +
      "unless `limit` is given. Each names its manifest file. A request body is ignored (the spec's binding has none).",
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'select', on: 'table' },
    responses: { 200: { description: 'The versions', schema: ListTableVersionsResponse } },
    errors: CATALOG_ERRORS,
  })
  listVersions(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidQuery(ListVersionsQuery) q: z.output<typeof ListVersionsQuery>) {
    return this.schema.listVersions(t, id, q);
  }

  @Post('table/:id/version/describe')
  @Operation({
    operationId: 'DescribeTableVersion',
    summary: 'Describe a specific table version',
    description:
      'One version of the table (of `branch`): `version`, or the latest when absent; 404 (code 11) when the table has no such version.',
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'select', on: 'table' },
    responses: { 200: { description: 'The version', schema: DescribeTableVersionResponse } },
    errors: CATALOG_ERRORS,
  })
  describeVersion(
    @Tenant() t: TenantContext,
    @ObjectId() id: string[],
    @ValidBody(DescribeVersionBody) body: z.output<typeof DescribeVersionBody>,
  ) {
    return this.schema.describeVersion(t, id, body.version, body.branch);
  }

  @Post('table/:id/restore')
  @Operation({
    operationId: 'RestoreTable',
    summary: 'Restore table to a specific version',
    description: 'Writes a new version equal to `version`.',
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'manage', on: 'table' },
    responses: { 200: { description: 'Restored', schema: VersionResponse } },
    errors: WITH_CONFLICT,
  })
  @Audited('table.restore', (b) => ({ version: b?.version ?? null }))
  restore(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(VersionBody) body: z.output<typeof VersionBody>) {
    return this.schema.restore(t, id, body.version, body.branch);
  }

  @Post('table/:id/add_columns')
  @Operation({
    operationId: 'AlterTableAddColumns',
    summary: 'Add new columns to table schema',
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'manage', on: 'table' },
    responses: { 200: { description: 'Added', schema: VersionResponse } },
    errors: WITH_CONFLICT,
  })
  @Audited('table.add_columns')
  addColumns(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(AddColumnsBody) body: z.output<typeof AddColumnsBody>) {
    return this.schema.addColumns(t, id, body.new_columns, body.branch);
  }

  @Post('table/:id/backfill_column')
  @Operation({
    operationId: 'AlterTableBackfillColumns',
    summary: 'Trigger an async column backfill job',
    description:
      'Fills the rows of a computed column (declared with add_columns and `computed`) that hold no value yet, in a job ' +
      'kept in the catalog that any replica runs; answers its `job_id` at once (poll /v1/jobs/describe). An unknown ' +
      'column is a 404 (code 12), a column that is not computed a 400; `where` is not supported (406).',
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'modify', on: 'table' },
    responses: { 202: { description: 'The job was accepted', schema: JobIdResponse } },
    errors: [400, 401, 403, 404, 406, 503, '5XX'],
  })
  @Audited('table.backfill_column', (b) => ({ column: b?.column ?? null }))
  backfillColumn(
    @Tenant() t: TenantContext,
    @ObjectId() id: string[],
    @ValidBody(BackfillColumnBody) body: z.output<typeof BackfillColumnBody>,
  ) {
    return this.tableJobs.backfill(t, id, body.column, body.branch, body.where);
  }

  @Post('table/:id/alter_columns')
  @Operation({
    operationId: 'AlterTableAlterColumns',
    summary: 'Modify existing columns',
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'manage', on: 'table' },
    responses: { 200: { description: 'Altered', schema: VersionResponse } },
    errors: WITH_CONFLICT,
  })
  @Audited('table.alter_columns')
  alterColumns(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(AlterColumnsBody) body: z.output<typeof AlterColumnsBody>) {
    return this.schema.alterColumns(t, id, body.alterations, body.branch);
  }

  @Post('table/:id/drop_columns')
  @Operation({
    operationId: 'AlterTableDropColumns',
    summary: 'Remove columns from table schema',
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'manage', on: 'table' },
    responses: { 200: { description: 'Dropped', schema: VersionResponse } },
    errors: WITH_CONFLICT,
  })
  @Audited('table.drop_columns', (b) => ({ columns: b?.columns ?? null }))
  dropColumns(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(DropColumnsBody) body: z.output<typeof DropColumnsBody>) {
    return this.schema.dropColumns(t, id, body.columns, body.branch);
  }
}
