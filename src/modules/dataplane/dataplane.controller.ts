import { Body, Controller, Get, HttpCode, Param, Post, Query, Req, Res, UseGuards } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Errors } from '../../common/errors';
import { parseBody } from '../../common/request-schemas';
import { ObjectId } from '../../common/route-params';
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
  CreateIndexBody,
  DeleteBody,
  DropColumnsBody,
  ExplainBody,
  flag,
  mergeKeys,
  optionalString,
  QueryBody,
  UpdateBody,
  VersionBody,
} from './dataplane.schemas';
import { CreateMode, DataplaneService, Dialect } from './dataplane.service';

type Q = Record<string, unknown>;

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

function createMode(raw: unknown): CreateMode {
  const v = optionalString(raw);
  if (v === undefined) return 'create';
  const norm = v.toLowerCase().replace(/_/g, '');
  if (norm === 'create' || norm === 'existok' || norm === 'overwrite') return norm;
  throw Errors.invalidInput(`unsupported mode '${v}'; expected create, exist_ok or overwrite`);
}

function insertMode(raw: unknown): 'append' | 'overwrite' {
  const v = (optionalString(raw) ?? 'append').toLowerCase();
  if (v === 'append' || v === 'overwrite') return v;
  throw Errors.invalidInput(`unsupported mode '${v}'; expected append or overwrite`);
}

function jsonMap(raw: unknown, name: string): Record<string, string> | undefined {
  const v = optionalString(raw);
  if (v === undefined) return undefined;
  try {
    const o = JSON.parse(v);
    if (o && typeof o === 'object' && !Array.isArray(o) && Object.values(o).every((x) => typeof x === 'string')) return o;
  } catch {
    /* below */
  }
  throw Errors.invalidInput(`${name} must be a JSON object of strings`);
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
  create(@Tenant() t: TenantContext, @ObjectId() id: string[], @Query() q: Q, @Req() req: FastifyRequest) {
    const props = jsonMap(q.properties, 'properties');
    return this.data.create(t, id, createMode(q.mode), arrowBody(req), dialectOf(req), props);
  }

  @Post('table/:id/insert')
  @HttpCode(200)
  @RequiresRole('write')
  insert(@Tenant() t: TenantContext, @ObjectId() id: string[], @Query() q: Q, @Req() req: FastifyRequest) {
    return this.data.insert(t, id, insertMode(q.mode), arrowBody(req));
  }

  @Post('table/:id/merge_insert')
  @HttpCode(200)
  @RequiresRole('write')
  mergeInsert(@Tenant() t: TenantContext, @ObjectId() id: string[], @Query() q: Q, @Req() req: FastifyRequest) {
    return this.data.mergeInsert(
      t,
      id,
      {
        on: mergeKeys(q.on),
        whenMatchedUpdateAll: flag(q.when_matched_update_all, 'when_matched_update_all', false),
        whenMatchedUpdateAllFilt: optionalString(q.when_matched_update_all_filt),
        whenNotMatchedInsertAll: flag(q.when_not_matched_insert_all, 'when_not_matched_insert_all', false),
        whenNotMatchedBySourceDelete: flag(q.when_not_matched_by_source_delete, 'when_not_matched_by_source_delete', false),
        whenNotMatchedBySourceDeleteFilt: optionalString(q.when_not_matched_by_source_delete_filt),
        useIndex: flag(q.use_index, 'use_index', true),
        timeoutMs: timeoutMs(req),
      },
      arrowBody(req),
    );
  }

  /** A bare JSON integer (both dialects); POST reads `predicate`/`version` from the body, GET from the query. */
  @Post('table/:id/count_rows')
  @HttpCode(200)
  async countRowsPost(@Tenant() t: TenantContext, @ObjectId() id: string[], @Body() raw: unknown, @Res({ passthrough: true }) reply: FastifyReply) {
    const body = parseBody(CountRowsBody, raw);
    const r = await this.data.countRows(t, id, body.predicate ?? body.filter, body.version);
    reply.header('x-lancedb-version', String(r.version)).type('application/json');
    return JSON.stringify(r.count);
  }

  @Get('table/:id/count_rows')
  async countRowsGet(@Tenant() t: TenantContext, @ObjectId() id: string[], @Query() q: Q, @Res({ passthrough: true }) reply: FastifyReply) {
    const v = optionalString(q.version);
    const r = await this.data.countRows(t, id, optionalString(q.predicate), v === undefined ? undefined : Number(v));
    reply.header('x-lancedb-version', String(r.version)).type('application/json');
    return JSON.stringify(r.count);
  }

  /** Answers an Arrow IPC file. */
  @Post('table/:id/query')
  @HttpCode(200)
  async query(@Tenant() t: TenantContext, @ObjectId() id: string[], @Body() raw: unknown, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply) {
    const r = await this.data.query(t, id, parseBody(QueryBody, raw), timeoutMs(req));
    reply.header('x-lancedb-version', String(r.version)).type(ARROW_FILE_TYPE);
    return r.body;
  }

  /** A JSON string literal. */
  @Post('table/:id/explain_plan')
  @HttpCode(200)
  async explainPlan(@Tenant() t: TenantContext, @ObjectId() id: string[], @Body() raw: unknown, @Res({ passthrough: true }) reply: FastifyReply) {
    const body = parseBody(ExplainBody, raw);
    const plan = await this.data.explainPlan(t, id, parseBody(QueryBody, body.query ?? {}), body.verbose ?? false);
    reply.type('application/json');
    return JSON.stringify(plan);
  }

  @Post('table/:id/update')
  @HttpCode(200)
  @RequiresRole('write')
  @Audited('table.update', (_b, r) => ({ version: r?.version ?? null }))
  update(@Tenant() t: TenantContext, @ObjectId() id: string[], @Body() raw: unknown) {
    const body = parseBody(UpdateBody, raw);
    return this.data.update(t, id, body.updates, body.predicate);
  }

  @Post('table/:id/delete')
  @HttpCode(200)
  @RequiresRole('write')
  @Audited('table.delete', (b, r) => ({ predicate: b?.predicate ?? null, version: r?.version ?? null }))
  delete(@Tenant() t: TenantContext, @ObjectId() id: string[], @Body() raw: unknown) {
    return this.data.delete(t, id, parseBody(DeleteBody, raw).predicate);
  }

  @Post('table/:id/create_index')
  @HttpCode(200)
  @RequiresRole('write')
  @Audited('table.create_index', (b) => ({ column: b?.column ?? null, index_type: b?.index_type ?? null }))
  createIndex(@Tenant() t: TenantContext, @ObjectId() id: string[], @Body() raw: unknown) {
    return this.data.createIndex(t, id, parseBody(CreateIndexBody, raw));
  }

  @Post('table/:id/index/list')
  @HttpCode(200)
  listIndices(@Tenant() t: TenantContext, @ObjectId() id: string[], @Body() raw: unknown) {
    return this.data.listIndices(t, id, parseBody(VersionBody, raw).version);
  }

  @Post('table/:id/index/:name/stats')
  @HttpCode(200)
  indexStats(@Tenant() t: TenantContext, @ObjectId() id: string[], @Param('name') name: string, @Body() raw: unknown) {
    return this.data.indexStats(t, id, name, parseBody(VersionBody, raw).version);
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
  restore(@Tenant() t: TenantContext, @ObjectId() id: string[], @Body() raw: unknown) {
    return this.data.restore(t, id, parseBody(VersionBody, raw).version);
  }

  @Post('table/:id/add_columns')
  @HttpCode(200)
  @RequiresRole('write')
  @Audited('table.add_columns')
  addColumns(@Tenant() t: TenantContext, @ObjectId() id: string[], @Body() raw: unknown) {
    return this.data.addColumns(t, id, parseBody(AddColumnsBody, raw).new_columns);
  }

  @Post('table/:id/alter_columns')
  @HttpCode(200)
  @RequiresRole('write')
  @Audited('table.alter_columns')
  alterColumns(@Tenant() t: TenantContext, @ObjectId() id: string[], @Body() raw: unknown) {
    return this.data.alterColumns(t, id, parseBody(AlterColumnsBody, raw).alterations);
  }

  @Post('table/:id/drop_columns')
  @HttpCode(200)
  @RequiresRole('write')
  @Audited('table.drop_columns', (b) => ({ columns: b?.columns ?? null }))
  dropColumns(@Tenant() t: TenantContext, @ObjectId() id: string[], @Body() raw: unknown) {
    return this.data.dropColumns(t, id, parseBody(DropColumnsBody, raw).columns);
  }
}
