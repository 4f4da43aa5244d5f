import { Controller, Param, Post } from '@nestjs/common';
import { z } from 'zod';
import { ObjectId } from '../../../platform/http/route-params';
import { ValidBody, ValidQuery } from '../../../platform/http/validation/zod-validation.pipe';
import { Audited } from '../../audit';
import { CATALOG_ERRORS, Operation, WITH_CONFLICT } from '../../../platform/http/operation.decorator';
import { Tenant, TenantContext } from '../../identity';
import { BranchQuery, EmptyResponse, VersionBody } from '../dataplane.schemas';
import { CreateIndexBody, DescribeTableIndexStatsResponse, ListTableIndicesResponse } from './table-indices.schemas';
import { TableIndicesService } from './table-indices.service';

/** Indexes: create, list, stats, drop (CreateTableScalarIndex is in ../refs/table-refs.controller.ts). */
@Controller('v1')
export class TableIndicesController {
  constructor(private readonly indices: TableIndicesService) {}

  @Post('table/:id/create_index')
  @Operation({
    operationId: 'CreateTableIndex',
    summary: 'Create an index on a table',
    description: 'Builds the index before answering.',
    tag: 'Index',
    access: 'catalog',
    needs: { privilege: 'manage', on: 'table' },
    responses: { 200: { description: 'Created (an empty object)', schema: EmptyResponse } },
    errors: WITH_CONFLICT,
  })
  @Audited('table.create_index', (b) => ({ column: b?.column ?? null, index_type: b?.index_type ?? null }))
  createIndex(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(CreateIndexBody) body: z.output<typeof CreateIndexBody>) {
    return this.indices.createIndex(t, id, body);
  }

  @Post('table/:id/index/list')
  @Operation({
    operationId: 'ListTableIndices',
    summary: 'List indexes on a table',
    tag: 'Index',
    access: 'catalog',
    needs: { privilege: 'describe', on: 'table' },
    responses: { 200: { description: 'The indexes', schema: ListTableIndicesResponse } },
    errors: CATALOG_ERRORS,
  })
  listIndices(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(VersionBody) body: z.output<typeof VersionBody>) {
    return this.indices.listIndices(t, id, body.version, body.branch);
  }

  @Post('table/:id/index/:name/stats')
  @Operation({
    operationId: 'DescribeTableIndexStats',
    summary: 'Get table index statistics',
    tag: 'Index',
    access: 'catalog',
    needs: { privilege: 'describe', on: 'table' },
    pathParams: { name: { rename: 'index_name', description: 'Name of the index.' } },
    responses: { 200: { description: 'Index statistics', schema: DescribeTableIndexStatsResponse } },
    errors: CATALOG_ERRORS,
  })
  indexStats(
    @Tenant() t: TenantContext,
    @ObjectId() id: string[],
    @Param('name') name: string,
    @ValidBody(VersionBody) body: z.output<typeof VersionBody>,
  ) {
    return this.indices.indexStats(t, id, name, body.version, body.branch);
  }

  @Post('table/:id/index/:name/drop')
  @Operation({
    operationId: 'DropTableIndex',
    summary: 'Drop a specific index',
    tag: 'Index',
    access: 'catalog',
    needs: { privilege: 'manage', on: 'table' },
    pathParams: { name: { rename: 'index_name', description: 'Name of the index.' } },
    responses: { 200: { description: 'Dropped (an empty object)', schema: EmptyResponse } },
    errors: CATALOG_ERRORS,
  })
  @Audited('table.drop_index')
  dropIndex(
    @Tenant() t: TenantContext,
    @ObjectId() id: string[],
    @Param('name') name: string,
    @ValidQuery(BranchQuery) q: z.output<typeof BranchQuery>,
  ) {
    return this.indices.dropIndex(t, id, name, q.branch);
  }
}
