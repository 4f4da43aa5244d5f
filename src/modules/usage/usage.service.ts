import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../../platform/config/config';
import { Errors } from '../../platform/http/errors';
import { paginate } from '../../platform/http/pagination';
import type { PageRequest } from '../../platform/http/validation/fields';
import { DatabasesService } from '../databases';
import type { FleetUsageReport, TopStorageReport, UsageHistoryReport, UsageReport } from './usage.schemas';
import { FleetSort, NO_COUNTS, PeriodRow, UsageRepository } from '../metering';

const HOUR_MS = 3600_000;
const DAY_MS = 24 * HOUR_MS;
const MAX_DAYS = 400;
const MAX_HOURS = 31 * 24;

const isKey = (v: unknown): v is [number, string] =>
  Array.isArray(v) && v.length === 2 && typeof v[0] === 'number' && typeof v[1] === 'string';

const floorTo = (ms: number, unit: number) => Math.floor(ms / unit) * unit;

/** One period row as the API shows it. */
function present(r: Omit<PeriodRow, 'start'>) {
  return {
    read_requests: r.readRequests,
    write_requests: r.writeRequests,
    requests: r.readRequests + r.writeRequests,
    rows_written: r.rowsWritten,
    bytes_ingested: r.bytesIngested,
    queries: r.queries,
    throttled_requests: r.throttledRequests,
    failed_requests: r.failedRequests,
    storage_bytes: r.storageBytes,
    current_version_bytes: r.currentVersionBytes,
    tables: r.tables,
    namespaces: r.namespaces,
  };
}

const EMPTY: Omit<PeriodRow, 'start'> = {
  ...NO_COUNTS,
  storageBytes: null,
  currentVersionBytes: null,
  tables: null,
  namespaces: null,
};

/** Columns of the CSV answers, in order (columns added later go last, so positional readers keep working). */
const CSV_COUNTERS = [
  'read_requests',
  'write_requests',
  'requests',
  'rows_written',
  'bytes_ingested',
  'queries',
  'storage_bytes',
  'tables',
  'namespaces',
  'current_version_bytes',
  'throttled_requests',
  'failed_requests',
] as const;

export interface UsageRange {
  from?: string;
  to?: string;
  granularity: 'day' | 'hour';
}

const csvField = (v: unknown): string => {
  if (v === null || v === undefined) return '';
  const s = String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
};

/** The usage API's reports (docs/usage-and-quotas.md). */
@Injectable()
export class UsageService {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repo: UsageRepository,
    private readonly databases: DatabasesService,
  ) {}

  /** One database's usage per UTC day or hour in [from, to): every period of the range, zero when nothing was counted. */
  async database(name: string, q: UsageRange): Promise<UsageReport> {
    const db = await this.databases.require(name);
    return { database: db.name, ...(await this.series(db.id, q)) };
  }

  /** Every database's usage summed per UTC day or hour in [from, to), as database() answers for one. */
  history(q: UsageRange): Promise<UsageHistoryReport> {
    return this.series(null, q);
  }

  /**
   * The periods of [from, to) (defaults: the 30 days or 24 hours up to the end of the current one; bounds rounded out
   * to whole periods), each with the counters of one database or (null) of all: zero where nothing was counted, so
   * that the rows make a continuous axis.
   */
  private async series(databaseId: string | null, q: UsageRange): Promise<UsageHistoryReport> {
    const unit = q.granularity === 'day' ? DAY_MS : HOUR_MS;
    const to = q.to ? floorTo(new Date(q.to).getTime() + unit - 1, unit) : floorTo(Date.now(), unit) + unit;
    const from = q.from ? floorTo(new Date(q.from).getTime(), unit) : to - (q.granularity === 'day' ? 30 : 24) * unit;
    if (from >= to) throw Errors.invalidInput('from must be before to');
    const max = q.granularity === 'day' ? MAX_DAYS : MAX_HOURS;
    if ((to - from) / unit > max) throw Errors.invalidInput(`at most ${max} ${q.granularity}s per request; narrow from/to`);
    const rows = await this.repo.periods(databaseId, q.granularity, new Date(from), new Date(to));
    const byStart = new Map(rows.map((r) => [r.start.getTime(), r]));
    const periods = [];
    for (let t = from; t < to; t += unit) {
      const r = byStart.get(t) ?? EMPTY;
      periods.push({ start: new Date(t).toISOString(), ...present(r) });
    }
    return { granularity: q.granularity, from: new Date(from).toISOString(), to: new Date(to).toISOString(), periods };
  }

  /** Every database's usage on one UTC day, largest first by `sort`, keyset-paginated. */
  async fleet(q: PageRequest & { date?: string; sort: FleetSort }): Promise<FleetUsageReport> {
    const date = q.date ?? new Date().toISOString().slice(0, 10);
    const { rows, ...next } = await paginate(q, this.config, {
      isKey,
      fetch: (after, take) => this.repo.fleet(date, q.sort, after, take),
      keyOf: (r): [number, string] => [r.sortKey, r.name],
    });
    return { date, sort: q.sort, databases: rows.map((r) => ({ database: r.name, ...present(r) })), ...next };
  }

  async topByStorage(limit: number): Promise<TopStorageReport> {
    const rows = await this.repo.topByStorage(Math.min(Math.max(limit, 1), 1000));
    return {
      databases: rows.map((r) => ({
        database: r.name,
        storage_bytes: r.storageBytes,
        current_version_bytes: r.currentBytes,
        tables: r.tables,
      })),
    };
  }

  /** A report as CSV (RFC 4180, a header line, one line per period or database). */
  toCsv(report: UsageReport | UsageHistoryReport | FleetUsageReport): string {
    const lines: string[] = [];
    const line = (fields: unknown[]) => lines.push(fields.map(csvField).join(','));
    if ('database' in report) {
      line(['database', 'granularity', 'start', ...CSV_COUNTERS]);
      for (const p of report.periods) line([report.database, report.granularity, p.start, ...CSV_COUNTERS.map((c) => p[c])]);
    } else if ('periods' in report) {
      line(['granularity', 'start', ...CSV_COUNTERS]);
      for (const p of report.periods) line([report.granularity, p.start, ...CSV_COUNTERS.map((c) => p[c])]);
    } else {
      line(['date', 'database', ...CSV_COUNTERS]);
      for (const d of report.databases) line([report.date, d.database, ...CSV_COUNTERS.map((c) => d[c])]);
    }
    return lines.join('\r\n') + '\r\n';
  }
}
