import { Controller, Get, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { ObjectId } from '../../../platform/http/route-params';
import { ValidBody, ValidQuery } from '../../../platform/http/validation/zod-validation.pipe';
import { ARROW_FILE, CATALOG_ERRORS, Operation, TIMEOUT_HEADER, VERSION_HEADER } from '../../../platform/http/operation.decorator';
import { Tenant, TenantContext } from '../../identity';
import { ARROW_FILE_TYPE } from '../dataplane.constants';
import { timeoutMs } from '../request-timeout';
import { QueryBody } from '../dataplane.schemas';
import { CountRowsBody, CountRowsQuery, CountTableRowsResponse, ExplainBody, ExplainTableQueryPlanResponse } from './table-reads.schemas';
import { TableReadsService } from './table-reads.service';

/**
 * Reads (count_rows, query, explain_plan) in the official remote client's dialect (bare query JSON) and the Lance
 * Namespace spec's (wrapped shapes); bodies are told apart by shape.
 */
@Controller('v1')
export class TableReadsController {
  constructor(private readonly reads: TableReadsService) {}

  /** A bare JSON integer (both dialects); POST reads `predicate`/`version` from the body, GET from the query. */
  @Post('table/:id/count_rows')
  @Operation({
    operationId: 'CountTableRows',
    summary: 'Count rows in a table',
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'select', on: 'table' },
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
    needs: { privilege: 'select', on: 'table' },
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
      "Vector, full-text or plain queries, in the spec's shapes or the official remote client's (bare `vector` and " +
      '`columns`). Answers an Arrow IPC file.',
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'select', on: 'table' },
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
    needs: { privilege: 'select', on: 'table' },
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
}
