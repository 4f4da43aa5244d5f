import { Controller, createParamDecorator, ExecutionContext, Get, Param, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { Errors } from '../../platform/http/errors';
import { bodyDigestOf, commitGateOf } from '../../platform/http/body-digest';
import { carriedClaimOf, type CarriedClaim } from '../idempotency/carried-claim';
import {
  CountTableRowsResponse,
  CreateTableResponse,
  DeleteFromTableResponse,
  DescribeTableIndexStatsResponse,
  DescribeTableVersionResponse,
  EmptyResponse,
  ExplainTableQueryPlanResponse,
  InsertIntoTableResponse,
  ListTableIndicesResponse,
  ListTableVersionsResponse,
  MergeInsertIntoTableResponse,
  UpdateTableResponse,
  VersionResponse,
} from '../catalog/response-schemas';
import { ObjectId } from '../../platform/http/route-params';
import { recordRequestPart } from '../../platform/http/validation/request-parts';
import { ValidBody, ValidQuery } from '../../platform/http/validation/zod-validation.pipe';
import { Audited } from '../audit/audited.decorator';
import {
  ARROW_ERRORS,
  ARROW_FILE,
  CATALOG_ERRORS,
  Operation,
  TIMEOUT_HEADER,
  VERSION_HEADER,
  WITH_CONFLICT,
} from '../../platform/http/operation.decorator';
import { Tenant, TenantContext } from '../identity/tenancy/tenant-context';
import { ARROW_FILE_TYPE } from './dataplane.constants';
import {
  AddColumnsBody,
  AlterColumnsBody,
  BackfillColumnBody,
  BranchQuery,
  CountRowsBody,
  CountRowsQuery,
  CreateIndexBody,
  CreateTableQuery,
  DeleteBody,
  DescribeVersionBody,
  DropColumnsBody,
  ExplainBody,
  InsertQuery,
  ListVersionsQuery,
  MergeInsertQuery,
  QueryBody,
  UpdateBody,
  VersionBody,
} from './dataplane.schemas';
import { dialectOf } from '../../engine/arrow/dialect';
import { TableIndicesService } from './indices/table-indices.service';
import { TableJobsService } from './jobs/table-jobs.service';
import { JobIdResponse } from '../jobs/jobs.schemas';
import { TableReadsService } from './reads/table-reads.service';
import { TableSchemaService } from './schema/table-schema.service';
import { TableWritesService } from './writes/table-writes.service';

/**
 * The raw request body of an Arrow route: never parsed or buffered by the framework (see app.ts). If the service
 * stops reading early (a bad body, over the limit), whatever the client still sends is discarded once the answer is
 * out, so the client reads the error instead of stalling on a full socket.
 */
export function arrowBody(
  req: FastifyRequest,
): AsyncIterable<Buffer> & { contentLength?: number; settled(maxBytes: number): Promise<void>; beforeCommit?: () => Promise<void>; claim?: CarriedClaim } {
  if (req.body !== undefined && req.body !== null) {
    throw Errors.unsupportedMediaType(`expected an Arrow IPC stream body (application/vnd.apache.arrow.stream)`);
  }
  const raw = req.raw;
  // A keyed write's claim: carried by the write's first catalog statement, else made once the body starts to arrive.
  const claim = carriedClaimOf(req);
  const declared = raw.headers['transfer-encoding'] === undefined ? Number(raw.headers['content-length']) : NaN;
  return {
    contentLength: Number.isSafeInteger(declared) && declared >= 0 ? declared : undefined,
    beforeCommit: commitGateOf(req),
    claim,
    settled: (maxBytes: number) =>
      new Promise<void>((resolve) => {
        if (raw.readableEnded || raw.destroyed) return resolve();
        let seen = 0;
        const onData = (chunk: Buffer) => {
          seen += chunk.length;
          if (seen > maxBytes) done();
        };
        const done = () => {
          raw.off('data', onData).off('end', done).off('close', done);
          resolve();
        };
        raw.on('data', onData).once('end', done).once('close', done);
      }),
    [Symbol.asyncIterator]: () => {
      const it = raw.iterator({ destroyOnReturn: false });
      const digest = bodyDigestOf(req);
      claim?.start();
      return {
        next: digest
          ? async () => {
              const r = await it.next();
              if (!r.done) digest.update(r.value as Buffer);
              return r;
            }
          : () => it.next(),
        return: async (value?: unknown) => {
          const r = await it.return!(value);
          if (!raw.readableEnded) raw.resume();
          return r;
        },
      } as AsyncIterator<Buffer>;
    },
  };
}

const arrowStream = createParamDecorator((_: unknown, ctx: ExecutionContext) => arrowBody(ctx.switchToHttp().getRequest<FastifyRequest>()));

/** The handler parameter is the request body as a stream of Arrow IPC bytes; `what` (what it holds) is documented. */
export const ArrowStream =
  (what: string): ParameterDecorator =>
  (target, key, index) => {
    recordRequestPart(target, key, { arrowStream: what });
    arrowStream()(target, key, index);
  };

function timeoutMs(req: FastifyRequest): number | undefined {
  const raw = req.headers['x-request-timeout-ms'];
  const n = Number(Array.isArray(raw) ? raw[0] : raw);
  return Number.isFinite(n) && n > 0 ? Math.floor(n) : undefined;
}

/**
 * Data operations on tables, in the official remote client's dialect (trailing slashes, bare query JSON) and the
 * Lance Namespace spec's (wrapped shapes); routes are the same, bodies are told apart by shape.
 */
@Controller('v1')
export class DataplaneController {
  constructor(
    private readonly indices: TableIndicesService,
    private readonly reads: TableReadsService,
    private readonly schema: TableSchemaService,
    private readonly writes: TableWritesService,
    private readonly tableJobs: TableJobsService,
  ) {}

  @Post('table/:id/create')
  @Operation({
    operationId: 'CreateTable',
    summary: 'Create a table with the given name',
    description:
      'Creates (or, by `mode`, keeps or overwrites) a table from an Arrow IPC stream. A new table is streamed into ' +
      'storage and registered when complete; a declared table gets its first version at its declared location.',
    tag: 'Table data',
    access: 'catalog',
    role: 'write',
    responses: { 200: { description: 'The table', schema: CreateTableResponse } },
    errors: ARROW_ERRORS,
  })
  @Audited('table.create')
  create(
    @Tenant() t: TenantContext,
    @ObjectId() id: string[],
    @ValidQuery(CreateTableQuery) q: z.output<typeof CreateTableQuery>,
    @ArrowStream('The rows, as an Arrow IPC stream (the content type is not required).') rows: AsyncIterable<Buffer>,
    @Req() req: FastifyRequest,
  ) {
    return this.writes.create(t, id, q.mode, rows, dialectOf(req), q.properties);
  }

  @Post('table/:id/insert')
  @Operation({
    operationId: 'InsertIntoTable',
    summary: 'Insert records into a table',
    description:
      'Appends (or with `mode=overwrite` replaces) rows in one commit. With `upload_id` and `upload_part_id` the body is ' +
      'one part of a multipart write: staged on the table\'s storage and committed by multipart_write/complete ' +
      '(answered with version 0 and nothing inserted yet).',
    tag: 'Table data',
    access: 'catalog',
    role: 'write',
    responses: { 200: { description: 'Inserted', schema: InsertIntoTableResponse } },
    errors: ARROW_ERRORS,
  })
  @Audited('table.insert')
  insert(
    @Tenant() t: TenantContext,
    @ObjectId() id: string[],
    @ValidQuery(InsertQuery) q: z.output<typeof InsertQuery>,
    @ArrowStream('The rows, as an Arrow IPC stream.') rows: AsyncIterable<Buffer>,
  ) {
    if (q.upload_id !== undefined || q.upload_part_id !== undefined) {
      if (q.upload_id === undefined || q.upload_part_id === undefined) throw Errors.invalidInput('a multipart part needs both upload_id and upload_part_id');
      if (q.mode === 'overwrite') throw Errors.invalidInput('a multipart write appends: mode=overwrite cannot be combined with upload_id');
      return this.writes.stagePart(t, id, q.upload_id, q.upload_part_id, rows);
    }
    return this.writes.insert(t, id, q.mode, rows, q.branch);
  }

  @Post('table/:id/merge_insert')
  @Operation({
    operationId: 'MergeInsertIntoTable',
    summary: 'Merge insert (upsert) records into a table',
    tag: 'Table data',
    access: 'catalog',
    role: 'write',
    headers: [TIMEOUT_HEADER],
    responses: { 200: { description: 'Merged', schema: MergeInsertIntoTableResponse } },
    errors: ARROW_ERRORS,
  })
  @Audited('table.merge_insert')
  mergeInsert(
    @Tenant() t: TenantContext,
    @ObjectId() id: string[],
    @ValidQuery(MergeInsertQuery) q: z.output<typeof MergeInsertQuery>,
    @ArrowStream('The source rows, as an Arrow IPC stream.') rows: AsyncIterable<Buffer>,
    @Req() req: FastifyRequest,
  ) {
    return this.writes.mergeInsert(
      t,
      id,
      {
        on: q.on,
        whenMatchedUpdateAll: q.when_matched_update_all,
        whenMatchedUpdateAllFilt: q.when_matched_update_all_filt,
        whenNotMatchedInsertAll: q.when_not_matched_insert_all,
        whenNotMatchedBySourceDelete: q.when_not_matched_by_source_delete,
        whenNotMatchedBySourceDeleteFilt: q.when_not_matched_by_source_delete_filt,
        useIndex: q.use_index,
        timeoutMs: timeoutMs(req),
        branch: q.branch,
      },
      rows,
    );
  }

  /** A bare JSON integer (both dialects); POST reads `predicate`/`version` from the body, GET from the query. */
  @Post('table/:id/count_rows')
  @Operation({
    operationId: 'CountTableRows',
    summary: 'Count rows in a table',
    tag: 'Table data',
    access: 'catalog',
    responses: {
      200: { description: 'The row count (a bare JSON number)', schema: CountTableRowsResponse, encoded: true, headers: VERSION_HEADER },
    },
    errors: CATALOG_ERRORS,
  })
  async countRowsPost(
    @Tenant() t: TenantContext,
    @ObjectId() id: string[],
    @ValidBody(CountRowsBody) body: z.output<typeof CountRowsBody>,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const r = await this.reads.countRows(t, id, body.predicate ?? body.filter, body.version, body.branch);
    reply.header('x-lancedb-version', String(r.version)).type('application/json');
    return JSON.stringify(r.count);
  }

  @Get('table/:id/count_rows')
  @Operation({
    operationId: 'CountTableRowsWithGet',
    summary: 'Count rows in a table (GET)',
    description: 'CountTableRows as the official client sends it (GET, no body).',
    tag: 'Table data',
    access: 'catalog',
    responses: {
      200: { description: 'The row count (a bare JSON number)', schema: CountTableRowsResponse, encoded: true, headers: VERSION_HEADER },
    },
    errors: CATALOG_ERRORS,
  })
  async countRowsGet(
    @Tenant() t: TenantContext,
    @ObjectId() id: string[],
    @ValidQuery(CountRowsQuery) q: z.output<typeof CountRowsQuery>,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const r = await this.reads.countRows(t, id, q.predicate, q.version, q.branch);
    reply.header('x-lancedb-version', String(r.version)).type('application/json');
    return JSON.stringify(r.count);
  }

  /** Answers an Arrow IPC file. */
  @Post('table/:id/query')
  @Operation({
    operationId: 'QueryTable',
    summary: 'Query a table',
    description:
      'Vector, full-text or plain queries, in the spec\'s shapes or the official remote client\'s (bare `vector` and ' +
      '`columns`). Answers an Arrow IPC file.',
    tag: 'Table data',
    access: 'catalog',
    headers: [TIMEOUT_HEADER],
    responses: {
      200: {
        description: 'The result rows',
        raw: { contentType: ARROW_FILE, schema: { type: 'string', format: 'binary' } },
        headers: VERSION_HEADER,
      },
    },
    errors: CATALOG_ERRORS,
  })
  async query(
    @Tenant() t: TenantContext,
    @ObjectId() id: string[],
    @ValidBody(QueryBody) body: z.output<typeof QueryBody>,
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const r = await this.reads.query(t, id, body, timeoutMs(req));
    reply.header('x-lancedb-version', String(r.version)).type(ARROW_FILE_TYPE);
    return r.body;
  }

  /** A JSON string literal. */
  @Post('table/:id/explain_plan')
  @Operation({
    operationId: 'ExplainTableQueryPlan',
    summary: 'Get query execution plan explanation',
    tag: 'Table data',
    access: 'catalog',
    responses: { 200: { description: 'The plan', schema: ExplainTableQueryPlanResponse, encoded: true } },
    errors: CATALOG_ERRORS,
  })
  async explainPlan(
    @Tenant() t: TenantContext,
    @ObjectId() id: string[],
    @ValidBody(ExplainBody) body: z.output<typeof ExplainBody>,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    // The spec names the branch beside the query; the query's own `branch` is read too.
    const plan = await this.reads.explainPlan(t, id, { ...body.query, branch: body.branch ?? body.query.branch }, body.verbose ?? false);
    reply.type('application/json');
    return JSON.stringify(plan);
  }

  @Post('table/:id/update')
  @Operation({
    operationId: 'UpdateTable',
    summary: 'Update rows in a table',
    tag: 'Table data',
    access: 'catalog',
    role: 'write',
    responses: { 200: { description: 'Updated', schema: UpdateTableResponse } },
    errors: WITH_CONFLICT,
  })
  @Audited('table.update', (b) => ({ predicate: b?.predicate ?? null }))
  update(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(UpdateBody) body: z.output<typeof UpdateBody>) {
    return this.writes.update(t, id, body.updates, body.predicate, body.branch);
  }

  @Post('table/:id/delete')
  @Operation({
    operationId: 'DeleteFromTable',
    summary: 'Delete rows from a table',
    tag: 'Table data',
    access: 'catalog',
    role: 'write',
    responses: { 200: { description: 'Deleted', schema: DeleteFromTableResponse } },
    errors: WITH_CONFLICT,
  })
  @Audited('table.delete', (b) => ({ predicate: b?.predicate ?? null }))
  delete(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(DeleteBody) body: z.output<typeof DeleteBody>) {
    return this.writes.delete(t, id, body.predicate, body.branch);
  }

  @Post('table/:id/create_index')
  @Operation({
    operationId: 'CreateTableIndex',
    summary: 'Create an index on a table',
    description: 'Builds the index before answering.',
    tag: 'Index',
    access: 'catalog',
    role: 'write',
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
    role: 'write',
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

  @Post('table/:id/version/list')
  @Operation({
    operationId: 'ListTableVersions',
    summary: 'List all versions of a table',
    description:
      'Every version of the table (of `branch`), oldest first, or newest first with `descending=true`; all of them ' +
      'unless `limit` is given. Each names its manifest file. A request body is ignored (the spec\'s binding has none).',
    tag: 'Table data',
    access: 'catalog',
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
    description: 'One version of the table (of `branch`): `version`, or the latest when absent; 404 (code 11) when the table has no such version.',
    tag: 'Table data',
    access: 'catalog',
    responses: { 200: { description: 'The version', schema: DescribeTableVersionResponse } },
    errors: CATALOG_ERRORS,
  })
  describeVersion(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(DescribeVersionBody) body: z.output<typeof DescribeVersionBody>) {
    return this.schema.describeVersion(t, id, body.version, body.branch);
  }

  @Post('table/:id/restore')
  @Operation({
    operationId: 'RestoreTable',
    summary: 'Restore table to a specific version',
    description: 'Writes a new version equal to `version`.',
    tag: 'Table data',
    access: 'catalog',
    role: 'write',
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
    role: 'write',
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
    role: 'write',
    responses: { 202: { description: 'The job was accepted', schema: JobIdResponse } },
    errors: [400, 401, 403, 404, 406, 503, '5XX'],
  })
  @Audited('table.backfill_column', (b) => ({ column: b?.column ?? null }))
  backfillColumn(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(BackfillColumnBody) body: z.output<typeof BackfillColumnBody>) {
    return this.tableJobs.backfill(t, id, body.column, body.branch, body.where);
  }

  @Post('table/:id/alter_columns')
  @Operation({
    operationId: 'AlterTableAlterColumns',
    summary: 'Modify existing columns',
    tag: 'Table data',
    access: 'catalog',
    role: 'write',
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
    role: 'write',
    responses: { 200: { description: 'Dropped', schema: VersionResponse } },
    errors: WITH_CONFLICT,
  })
  @Audited('table.drop_columns', (b) => ({ columns: b?.columns ?? null }))
  dropColumns(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(DropColumnsBody) body: z.output<typeof DropColumnsBody>) {
    return this.schema.dropColumns(t, id, body.columns, body.branch);
  }
}
