import { Controller, Get, HttpCode, Param, Post, Req, Res, UseGuards } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { Errors } from '../../common/errors';
import { ObjectId } from '../../common/route-params';
import { ValidBody, ValidQuery } from '../../common/validation/zod-validation.pipe';
import { Audited } from '../audit/audited.decorator';
import { CatalogAccessGuard } from '../auth/catalog-access.guard';
import { DatabaseThrottlerGuard } from '../throttling/database-throttler.guard';
import { RequiresRole } from '../auth/requires-role.decorator';
import { Tenant, TenantContext } from '../tenancy/tenant-context';
import { ARROW_FILE_TYPE } from './dataplane.constants';
import {
  AddColumnsBody,
  AlterColumnsBody,
  CountRowsBody,
  CountRowsQuery,
  CreateIndexBody,
  CreateTableQuery,
  DeleteBody,
  DropColumnsBody,
  ExplainBody,
  InsertQuery,
  MergeInsertQuery,
  QueryBody,
  UpdateBody,
  VersionBody,
} from './dataplane.schemas';
import { DataplaneService, Dialect } from './dataplane.service';

/**
 * The raw request body of an Arrow route: never parsed or buffered by the framework (see app.ts). If the service
 * stops reading early (a bad body, over the limit), whatever the client still sends is discarded once the answer is
 * out, so the client reads the error instead of stalling on a full socket.
 */
export function arrowBody(req: FastifyRequest): AsyncIterable<Buffer> {
  if (req.body !== undefined && req.body !== null) {
    throw Errors.unsupportedMediaType(`expected an Arrow IPC stream body (application/vnd.apache.arrow.stream)`);
  }
  const raw = req.raw;
  return {
    [Symbol.asyncIterator]: () => {
      const it = raw.iterator({ destroyOnReturn: false });
      return {
        next: () => it.next(),
        return: async (value?: unknown) => {
          const r = await it.return!(value);
          if (!raw.readableEnded) raw.resume();
          return r;
        },
      } as AsyncIterator<Buffer>;
    },
  };
}

/** The official remote client announces itself with `x-lancedb-database` (host override) or its user agent. */
export function dialectOf(req: FastifyRequest): Dialect {
  const ua = String(req.headers['user-agent'] ?? '');
  return req.headers['x-lancedb-database'] !== undefined || /^LanceDB-\w+-Client\//.test(ua) ? 'remote' : 'spec';
}

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
@UseGuards(CatalogAccessGuard, DatabaseThrottlerGuard)
export class DataplaneController {
  constructor(private readonly data: DataplaneService) {}

  @Post('table/:id/create')
  @HttpCode(200)
  @RequiresRole('write')
  @Audited('table.create', (_b, r) => ({ version: r?.version ?? null }))
  create(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidQuery(CreateTableQuery) q: z.output<typeof CreateTableQuery>, @Req() req: FastifyRequest) {
    return this.data.create(t, id, q.mode, arrowBody(req), dialectOf(req), q.properties);
  }

  @Post('table/:id/insert')
  @HttpCode(200)
  @RequiresRole('write')
  insert(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidQuery(InsertQuery) q: z.output<typeof InsertQuery>, @Req() req: FastifyRequest) {
    return this.data.insert(t, id, q.mode, arrowBody(req));
  }

  @Post('table/:id/merge_insert')
  @HttpCode(200)
  @RequiresRole('write')
  mergeInsert(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidQuery(MergeInsertQuery) q: z.output<typeof MergeInsertQuery>, @Req() req: FastifyRequest) {
    return this.data.mergeInsert(
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
      },
      arrowBody(req),
    );
  }

  /** A bare JSON integer (both dialects); POST reads `predicate`/`version` from the body, GET from the query. */
  @Post('table/:id/count_rows')
  @HttpCode(200)
  async countRowsPost(
    @Tenant() t: TenantContext,
    @ObjectId() id: string[],
    @ValidBody(CountRowsBody) body: z.output<typeof CountRowsBody>,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const r = await this.data.countRows(t, id, body.predicate ?? body.filter, body.version);
    reply.header('x-lancedb-version', String(r.version)).type('application/json');
    return JSON.stringify(r.count);
  }

  @Get('table/:id/count_rows')
  async countRowsGet(
    @Tenant() t: TenantContext,
    @ObjectId() id: string[],
    @ValidQuery(CountRowsQuery) q: z.output<typeof CountRowsQuery>,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const r = await this.data.countRows(t, id, q.predicate, q.version);
    reply.header('x-lancedb-version', String(r.version)).type('application/json');
    return JSON.stringify(r.count);
  }

  /** Answers an Arrow IPC file. */
  @Post('table/:id/query')
  @HttpCode(200)
  async query(
    @Tenant() t: TenantContext,
    @ObjectId() id: string[],
    @ValidBody(QueryBody) body: z.output<typeof QueryBody>,
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const r = await this.data.query(t, id, body, timeoutMs(req));
    reply.header('x-lancedb-version', String(r.version)).type(ARROW_FILE_TYPE);
    return r.body;
  }

  /** A JSON string literal. */
  @Post('table/:id/explain_plan')
  @HttpCode(200)
  async explainPlan(
    @Tenant() t: TenantContext,
    @ObjectId() id: string[],
    @ValidBody(ExplainBody) body: z.output<typeof ExplainBody>,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const plan = await this.data.explainPlan(t, id, body.query, body.verbose ?? false);
    reply.type('application/json');
    return JSON.stringify(plan);
  }

  @Post('table/:id/update')
  @HttpCode(200)
  @RequiresRole('write')
  @Audited('table.update', (_b, r) => ({ version: r?.version ?? null }))
  update(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(UpdateBody) body: z.output<typeof UpdateBody>) {
    return this.data.update(t, id, body.updates, body.predicate);
  }

  @Post('table/:id/delete')
  @HttpCode(200)
  @RequiresRole('write')
  @Audited('table.delete', (b, r) => ({ predicate: b?.predicate ?? null, version: r?.version ?? null }))
  delete(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(DeleteBody) body: z.output<typeof DeleteBody>) {
    return this.data.delete(t, id, body.predicate);
  }

  @Post('table/:id/create_index')
  @HttpCode(200)
  @RequiresRole('write')
  @Audited('table.create_index', (b) => ({ column: b?.column ?? null, index_type: b?.index_type ?? null }))
  createIndex(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(CreateIndexBody) body: z.output<typeof CreateIndexBody>) {
    return this.data.createIndex(t, id, body);
  }

  @Post('table/:id/index/list')
  @HttpCode(200)
  listIndices(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(VersionBody) body: z.output<typeof VersionBody>) {
    return this.data.listIndices(t, id, body.version);
  }

  @Post('table/:id/index/:name/stats')
  @HttpCode(200)
  indexStats(
    @Tenant() t: TenantContext,
    @ObjectId() id: string[],
    @Param('name') name: string,
    @ValidBody(VersionBody) body: z.output<typeof VersionBody>,
  ) {
    return this.data.indexStats(t, id, name, body.version);
  }

  @Post('table/:id/index/:name/drop')
  @HttpCode(200)
  @RequiresRole('write')
  @Audited('table.drop_index')
  dropIndex(@Tenant() t: TenantContext, @ObjectId() id: string[], @Param('name') name: string) {
    return this.data.dropIndex(t, id, name);
  }

  @Post('table/:id/version/list')
  @HttpCode(200)
  listVersions(@Tenant() t: TenantContext, @ObjectId() id: string[]) {
    return this.data.listVersions(t, id);
  }

  @Post('table/:id/restore')
  @HttpCode(200)
  @RequiresRole('write')
  @Audited('table.restore', (b) => ({ version: b?.version ?? null }))
  restore(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(VersionBody) body: z.output<typeof VersionBody>) {
    return this.data.restore(t, id, body.version);
  }

  @Post('table/:id/add_columns')
  @HttpCode(200)
  @RequiresRole('write')
  @Audited('table.add_columns')
  addColumns(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(AddColumnsBody) body: z.output<typeof AddColumnsBody>) {
    return this.data.addColumns(t, id, body.new_columns);
  }

  @Post('table/:id/alter_columns')
  @HttpCode(200)
  @RequiresRole('write')
  @Audited('table.alter_columns')
  alterColumns(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(AlterColumnsBody) body: z.output<typeof AlterColumnsBody>) {
    return this.data.alterColumns(t, id, body.alterations);
  }

  @Post('table/:id/drop_columns')
  @HttpCode(200)
  @RequiresRole('write')
  @Audited('table.drop_columns', (b) => ({ columns: b?.columns ?? null }))
  dropColumns(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(DropColumnsBody) body: z.output<typeof DropColumnsBody>) {
    return this.data.dropColumns(t, id, body.columns);
  }
}
