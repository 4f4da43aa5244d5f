import { z } from 'zod';
import { PageQuery, queryInt, queryParam } from '../../platform/http/validation/fields';

const instant = (what: string) =>
  queryParam(
    z
      .string()
      .refine((v) => /^\d{4}-\d{2}-\d{2}$/.test(v) || z.iso.datetime({ offset: true }).safeParse(v).success, {
        error: `${what} must be a date (2026-11-01) or an RFC 3339 date-time`,
      })
      .refine((v) => !Number.isNaN(new Date(v).getTime()), { error: `${what} is not a valid date` })
      .optional(),
  );

export const UsageQuery = z.object({
  from: instant('from').describe('Start (inclusive; UTC). Default: 30 days (day) or 24 hours (hour) before `to`.'),
  to: instant('to').describe('End (exclusive; UTC). Default: the end of the current day (day) or hour (hour).'),
  granularity: queryParam(z.enum(['day', 'hour'], { error: "granularity must be 'day' or 'hour'" }).default('day')).describe(
    'One row per UTC day (with storage figures) or per UTC hour (counters only).',
  ),
});

export const FleetUsageQuery = PageQuery.extend({
  date: queryParam(
    z
      .string()
      .regex(/^\d{4}-\d{2}-\d{2}$/, { error: 'date must be a date such as 2026-11-01' })
      .refine((v) => !Number.isNaN(new Date(v).getTime()), { error: 'date is not a valid date' })
      .optional(),
  ).describe('The UTC day (default: today).'),
  sort: queryParam(z.enum(['storage', 'requests'], { error: "sort must be 'storage' or 'requests'" }).default('storage')).describe(
    'Largest first: storage bytes, or requests (read + write); then by name.',
  ),
});

export const TopStorageQuery = z.object({
  limit: queryInt().describe('How many databases (default 10, at most 1000).'),
});

const counters = {
  read_requests: z.number().int().describe('requests that needed the read role'),
  write_requests: z.number().int().describe('requests that needed the write or admin role'),
  requests: z.number().int().describe('read_requests + write_requests'),
  rows_written: z.number().int().describe('rows of committed writes with an Arrow body (create, insert, merge_insert)'),
  bytes_ingested: z.number().int().describe('Arrow IPC body bytes of those writes'),
  queries: z.number().int().describe('queries answered'),
  throttled_requests: z
    .number()
    .int()
    .describe(
      'requests refused by the database\'s or the key\'s rate limit (503 "Slow down"); also counted in read_requests/write_requests',
    ),
  failed_requests: z
    .number()
    .int()
    .describe(
      'requests answered with any other 5xx status (errors, unavailable catalog or store); also counted in read_requests/write_requests',
    ),
  storage_bytes: z
    .number()
    .int()
    .nullable()
    .describe(
      "bytes the database holds on its store as of the last measurement that day: every object under its tables' locations (all versions, indices, deletion files), plus what writes through the gateway added since each table was last measured; null: not measured (or hourly rows)",
    ),
  current_version_bytes: z
    .number()
    .int()
    .nullable()
    .describe(
      "sum of its tables' current-version data bytes (what the latest versions read) at the same measurement; null: not measured (or hourly rows)",
    ),
  tables: z.number().int().nullable(),
  namespaces: z.number().int().nullable(),
};

const period = z.object({ start: z.string().describe('the UTC day or hour the row covers'), ...counters });

export const UsageReport = z
  .object({
    database: z.string(),
    granularity: z.enum(['day', 'hour']),
    from: z.string(),
    to: z.string(),
    periods: z.array(period),
  })
  .meta({ id: 'UsageReport' });
export type UsageReport = z.infer<typeof UsageReport>;

export const UsageHistoryReport = z
  .object({
    granularity: z.enum(['day', 'hour']),
    from: z.string(),
    to: z.string(),
    periods: z
      .array(period)
      .describe(
        "one row per period of [from, to), zero where nothing was counted: every database's counters summed, and per day the sums of the databases' storage, table and namespace figures as last measured that day",
      ),
  })
  .meta({ id: 'UsageHistoryReport' });
export type UsageHistoryReport = z.infer<typeof UsageHistoryReport>;

export const FleetUsageReport = z
  .object({
    date: z.string(),
    sort: z.enum(['storage', 'requests']),
    databases: z.array(z.object({ database: z.string(), ...counters })),
    page_token: z.string().optional(),
  })
  .meta({ id: 'FleetUsageReport' });
export type FleetUsageReport = z.infer<typeof FleetUsageReport>;

export const TopStorageReport = z
  .object({
    databases: z.array(
      z.object({
        database: z.string(),
        storage_bytes: z.number().int().describe('bytes on its store as last measured, plus what writes through the gateway added since'),
        current_version_bytes: z.number().int().describe("sum of its tables' current-version data bytes as last measured"),
        tables: z.number().int(),
      }),
    ),
  })
  .meta({ id: 'TopStorageReport' });
export type TopStorageReport = z.infer<typeof TopStorageReport>;
