import { Controller, Get, Param, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { ValidQuery } from '../../platform/http/validation/zod-validation.pipe';
import { Operation, OPERATOR_ERRORS } from '../../platform/http/operation.decorator';
import {
  FleetUsageQuery,
  FleetUsageReport,
  TopStorageQuery,
  TopStorageReport,
  UsageHistoryReport,
  UsageQuery,
  UsageReport,
} from './usage.schemas';
import { UsageService } from './usage.service';

/** Whether the caller asked for CSV (`Accept: text/csv`). */
const wantsCsv = (req: FastifyRequest) => /\btext\/csv\b/i.test(String(req.headers.accept ?? ''));

const CSV_NOTE = ' With `Accept: text/csv` the same rows come as CSV (a header line, then one line per row).';

const COUNTERS_NOTE =
  'Requests (read/write, and of those the throttled and the failed ones), rows written, bytes ingested and queries per UTC day or hour in [from, to)';

/**
 * The usage API (docs/usage-and-quotas.md): one database's usage (the operator, or an admin credential of it), every
 * database's usage on a day and the databases storing most (the operator).
 */
@Controller('admin/v1')
export class UsageController {
  constructor(private readonly usage: UsageService) {}

  @Get('databases/:name/usage')
  @Operation({
    operationId: 'GetDatabaseUsage',
    summary: 'Usage of a database per day or hour',
    description:
      COUNTERS_NOTE +
      '; per day also storage bytes, tables and namespaces as last measured that day. Counters are exact but reach the catalog at the ' +
      'next flush of each replica (USAGE_FLUSH_INTERVAL_SECONDS); storage is measured by the storage refresher.' +
      CSV_NOTE,
    tag: 'Operator',
    access: 'database-admin',
    pathParams: { name: { description: 'Database name.' } },
    responses: { 200: { description: 'The usage, one row per period', schema: UsageReport } },
    errors: OPERATOR_ERRORS,
  })
  async database(
    @Param('name') name: string,
    @ValidQuery(UsageQuery) q: z.output<typeof UsageQuery>,
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<UsageReport> {
    return this.answer(await this.usage.database(name, q), req, reply);
  }

  @Get('usage/history')
  @Operation({
    operationId: 'GetFleetUsageHistory',
    summary: 'Usage of all databases together per day or hour',
    description:
      COUNTERS_NOTE +
      ', summed over every database, one row per period (zero where nothing was counted); per day also the sums of the ' +
      "databases' storage bytes, tables and namespaces as last measured that day (null: none measured; always null per " +
      "hour). The same query and defaults as a database's usage." +
      CSV_NOTE,
    tag: 'Operator',
    access: 'operator',
    responses: { 200: { description: 'The usage, one row per period', schema: UsageHistoryReport } },
    errors: [400, 401, 403, 503, '5XX'],
  })
  async history(
    @ValidQuery(UsageQuery) q: z.output<typeof UsageQuery>,
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<UsageHistoryReport> {
    return this.answer(await this.usage.history(q), req, reply);
  }

  @Get('usage')
  @Operation({
    operationId: 'ListDatabaseUsage',
    summary: 'Usage of every database on a day',
    description:
      'One row per database for a UTC day, largest first by `sort` (storage or requests), keyset-paginated ' +
      '(`page_token`; for CSV in the `x-page-token` answer header).' +
      CSV_NOTE,
    tag: 'Operator',
    access: 'operator',
    responses: { 200: { description: "The databases' usage", schema: FleetUsageReport } },
    errors: [400, 401, 403, 503, '5XX'],
  })
  async fleet(
    @ValidQuery(FleetUsageQuery) q: z.output<typeof FleetUsageQuery>,
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<FleetUsageReport> {
    const report = await this.usage.fleet(q);
    if (wantsCsv(req) && report.page_token) reply.header('x-page-token', report.page_token);
    return this.answer(report, req, reply);
  }

  @Get('usage/top-storage')
  @Operation({
    operationId: 'ListTopStorageDatabases',
    summary: 'The databases storing most',
    description: "The `limit` databases with the largest storage now (sum of their tables' last measured total_bytes).",
    tag: 'Operator',
    access: 'operator',
    responses: { 200: { description: 'Databases, largest first', schema: TopStorageReport } },
    errors: [400, 401, 403, 503, '5XX'],
  })
  top(@ValidQuery(TopStorageQuery) q: z.output<typeof TopStorageQuery>): Promise<TopStorageReport> {
    return this.usage.topByStorage(q.limit ?? 10);
  }

  /** The report as JSON, or with `Accept: text/csv` its CSV text in its place (the routes document the JSON shape). */
  private answer<R extends UsageReport | UsageHistoryReport | FleetUsageReport>(report: R, req: FastifyRequest, reply: FastifyReply): R {
    if (!wantsCsv(req)) return report;
    reply.type('text/csv; charset=utf-8');
    return this.usage.toCsv(report) as unknown as R;
  }
}
