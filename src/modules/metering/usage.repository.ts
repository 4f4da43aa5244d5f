import { Injectable } from '@nestjs/common';
import { Prisma } from '../../generated/prisma/client';
import { CatalogClient, UnitOfWork } from '../../platform/db/unit-of-work';

/**
 * Everything a database stores, one row per stored thing (database_id, bytes, current_bytes): each table's bytes on
 * its store as last measured plus what writes through the gateway added since (docs/usage-and-quotas.md). Every
 * storage figure (quota checks, the daily snapshot, top-storage, the fleet gauge) sums this. Soft-deleted tables
 * keep their bytes on the store: they join as one more branch here (`UNION ALL SELECT database_id,
 * COALESCE(storage_bytes, 0), 0 FROM dropped_tables`).
 */
/**
 * What a database stores: its live tables' bytes (last measurement plus what gateway writes added since), and its
 * soft-dropped tables' bytes as last counted before the drop (they stay on the store until purged).
 */
const STORED = Prisma.raw(
  `(SELECT database_id, total_bytes + written_bytes AS bytes, current_bytes FROM table_usage
    UNION ALL SELECT database_id, COALESCE(storage_bytes, 0), 0 FROM dropped_tables)`,
);

/** What one replica counted for one database in one UTC hour. */
export interface CounterRow {
  databaseId: string;
  /** The hour's start (ms since the epoch, UTC). */
  hour: number;
  readRequests: number;
  writeRequests: number;
  rowsWritten: number;
  bytesIngested: number;
  queries: number;
  /** Requests refused by the rate limit (503 "Slow down"), also in read/writeRequests. */
  throttledRequests: number;
  /** Requests answered with another 5xx status, also in read/writeRequests. */
  failedRequests: number;
}

/**
 * A database's row of an hour with every counter at zero, written out rather than spread from NO_COUNTS: the meter
 * makes one for most requests of a fleet's random tenants.
 */
export function zeroRow(databaseId: string, hour: number): CounterRow {
  return {
    databaseId,
    hour,
    readRequests: 0,
    writeRequests: 0,
    rowsWritten: 0,
    bytesIngested: 0,
    queries: 0,
    throttledRequests: 0,
    failedRequests: 0,
  };
}

/** Every counter at zero: a period nothing was counted in. */
export const NO_COUNTS: Readonly<Omit<CounterRow, 'databaseId' | 'hour'>> = Object.freeze(
  (({ databaseId: _id, hour: _hour, ...counts }) => counts)(zeroRow('', 0)),
);

/** The counters' names. */
const COUNTERS = Object.keys(NO_COUNTS) as Array<keyof typeof NO_COUNTS>;

/** Counters summed over a period (an hour or a day), as the usage API reports them. */
export interface PeriodRow extends Omit<CounterRow, 'databaseId' | 'hour'> {
  start: Date;
  storageBytes: number | null;
  currentVersionBytes: number | null;
  tables: number | null;
  namespaces: number | null;
}

export interface FleetRow extends Omit<PeriodRow, 'start'> {
  name: string;
  sortKey: number;
}

export interface ClaimedTable {
  tableId: string;
  databaseId: string;
  location: string;
  /**
   * The catalog's time of the claim, at the catalog's own precision (milliseconds, rounded as marked_at is; kept as
   * its text, since a JavaScript Date truncates instead): what scanned_at becomes (writes after it leave the table due
   * again).
   */
  claimedAt: string;
  /** The table's written_bytes at the claim: the estimate the measurement replaces. */
  writtenBytes: number;
}

export type FleetSort = 'storage' | 'requests';

/** The usage_counters columns summed, as the row fields figures() reads. */
const COUNTER_SUMS = Prisma.raw(
  `sum(read_requests) AS r, sum(write_requests) AS w, sum(rows_written) AS rw, sum(bytes_ingested) AS b, sum(queries) AS q,
   sum(throttled_requests) AS th, sum(failed_requests) AS f`,
);

const num = (v: unknown): number => (v === null || v === undefined ? 0 : Number(v));
const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

/**
 * Rows per statement of a flush's multi-row writes (counter rows, table marks): a flush of 5,000 databases' counters
 * is 5 statements of a few tens of kilobytes of parameters each.
 */
export const FLUSH_CHUNK = 1000;

/** Why a table is due for a measurement (table_usage.marked): lower is more urgent. */
export type MarkKind = 1 | 2;
/** Written through the gateway (its commits, maintenance, an undrop): measured first. */
export const MARK_WRITTEN: MarkKind = 1;
/** Opened for writing (a describe with a write key: a namespace-mode writer may write it directly). */
export const MARK_OPENED: MarkKind = 2;

interface TableMark {
  id: string;
  kind: MarkKind;
  /** Bytes gateway commits added (written_bytes). */
  bytes: number;
}

/** Sorted rows with one row per database and hour (one statement may not update a counter row twice). */
function sumRepeats(sorted: CounterRow[]): CounterRow[] {
  const out: CounterRow[] = [];
  for (const r of sorted) {
    const last = out[out.length - 1];
    if (!last || last.databaseId !== r.databaseId || last.hour !== r.hour) {
      out.push(r);
      continue;
    }
    for (const k of COUNTERS) last[k] += r[k];
  }
  return out;
}

/** `items` in slices of at most `size`, in order. */
function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/**
 * The usage tables (migration 20261124020000_usage_quotas): hourly counters added to by flushes (idempotent through
 * usage_flushes), per-table sizes with the refresher's leases, and the daily storage snapshot.
 */
@Injectable()
export class UsageRepository {
  constructor(private readonly uow: UnitOfWork) {}

  private get db(): CatalogClient {
    return this.uow.db;
  }

  /**
   * Adds one flush's counters and marks the tables it saw written or opened for writing, once: the (replica, seq) row
   * is inserted first, in the caller's unit of work; if it exists already (a retry of a flush that committed) nothing
   * is added. Returns whether the flush was applied now. `opened`: tables opened for writing (a describe with a write
   * key); `grown`: [table location, bytes] that gateway commits added, added to the tables' written_bytes (marking them
   * written); `written`: tables written through the gateway by id.
   *
   * Several replicas flush at once, into the same counter rows (a database's hour) and table rows: every multi-row
   * write here takes its rows in key order, up to FLUSH_CHUNK at a time, so that two flushes lock the rows
   * they share in the same order and never deadlock (unsorted, one flush of three replicas met `40P01`).
   */
  async applyFlush(
    replica: string,
    seq: number,
    rows: CounterRow[],
    opened: string[],
    grown: Array<[string, number]> = [],
    written: string[] = [],
  ): Promise<boolean> {
    if (!this.uow.inProgress) throw new Error('applyFlush needs a unit of work');
    const fresh = await this.db.$queryRaw<{ seq: unknown }[]>`
      INSERT INTO usage_flushes (replica, seq) VALUES (${replica}, ${seq}::bigint) ON CONFLICT DO NOTHING RETURNING seq`;
    if (fresh.length === 0) return false;
    const counters = sumRepeats(
      rows
        .map((r) => ({ ...r, databaseId: r.databaseId.toLowerCase() }))
        .sort((a, b) => (a.databaseId < b.databaseId ? -1 : a.databaseId > b.databaseId ? 1 : a.hour - b.hour)),
    );
    for (const chunk of chunks(counters, FLUSH_CHUNK)) await this.addCounters(chunk);
    const marks = await this.tableMarks(opened, grown, written);
    for (const chunk of chunks(marks, FLUSH_CHUNK)) await this.markTables(chunk);
    return true;
  }

  /** Adds counter rows (sorted by database and hour) in one statement, in that order. */
  private async addCounters(rows: CounterRow[]): Promise<void> {
    const col = <K extends keyof CounterRow>(k: K) => rows.map((r) => r[k]);
    await this.db.$executeRaw`
      INSERT INTO usage_counters AS c (database_id, hour, read_requests, write_requests, rows_written, bytes_ingested, queries,
                                       throttled_requests, failed_requests)
      SELECT x.d, x.h, x.r, x.w, x.rw, x.b, x.q, x.th, x.f
        FROM unnest(${col('databaseId')}::uuid[], ${rows.map((r) => new Date(r.hour).toISOString())}::timestamptz[],
                    ${col('readRequests')}::bigint[], ${col('writeRequests')}::bigint[], ${col('rowsWritten')}::bigint[],
                    ${col('bytesIngested')}::bigint[], ${col('queries')}::bigint[], ${col('throttledRequests')}::bigint[],
                    ${col('failedRequests')}::bigint[])
             AS x(d, h, r, w, rw, b, q, th, f)
       ORDER BY x.d, x.h
      ON CONFLICT (database_id, hour) DO UPDATE SET
        read_requests = c.read_requests + EXCLUDED.read_requests,
        write_requests = c.write_requests + EXCLUDED.write_requests,
        rows_written = c.rows_written + EXCLUDED.rows_written,
        bytes_ingested = c.bytes_ingested + EXCLUDED.bytes_ingested,
        queries = c.queries + EXCLUDED.queries,
        throttled_requests = c.throttled_requests + EXCLUDED.throttled_requests,
        failed_requests = c.failed_requests + EXCLUDED.failed_requests`;
  }

  /**
   * One mark per table, sorted by table id: the grown locations' tables (looked up by location, no lock taken; a
   * table dropped meanwhile is not found) and the tables written, with what they grew, then the tables only opened.
   */
  private async tableMarks(opened: string[], grown: Array<[string, number]>, written: string[]): Promise<TableMark[]> {
    const marks = new Map<string, TableMark>();
    const mark = (id: string, kind: MarkKind, bytes: number) => {
      const key = id.toLowerCase();
      const m = marks.get(key);
      if (!m) marks.set(key, { id: key, kind, bytes });
      else {
        m.kind = Math.min(m.kind, kind) as MarkKind;
        m.bytes += bytes;
      }
    };
    if (grown.length > 0) {
      const bytes = new Map<string, number>();
      for (const [l, b] of grown) bytes.set(l, (bytes.get(l) ?? 0) + Math.max(0, Math.round(b)));
      for (const chunk of chunks([...bytes.keys()], FLUSH_CHUNK)) {
        // By location (tables_location_key is on md5(location)).
        const found = await this.db.$queryRaw<{ id: string; location: string }[]>`
          SELECT t.id, t.location FROM unnest(${chunk}::text[]) AS x(l)
            JOIN tables t ON md5(t.location) = md5(x.l) AND t.location = x.l`;
        for (const f of found) mark(f.id, MARK_WRITTEN, bytes.get(f.location) ?? 0);
      }
    }
    for (const id of written) mark(id, MARK_WRITTEN, 0);
    for (const id of opened) mark(id, MARK_OPENED, 0);
    return [...marks.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /**
   * Marks tables (sorted by id) due for a measurement, locking their rows in that order first. A table already marked
   * as urgently, with no bytes to add and no measurement under way, is left as it is: no row is written (describes
   * with a write key repeat marks by the thousand), except that an open moves `touched_at` on when it is 5 minutes
   * old (a writer that keeps its handle is re-measured every 5 min within the hour after its last open). Under a
   * measurement the mark's time moves on (clock time, after the claim), so that the measurement, which covers only
   * what came before its claim, leaves the table marked.
   */
  private async markTables(marks: TableMark[]): Promise<void> {
    await this.db.$executeRaw`
      WITH m AS (
        SELECT * FROM unnest(${marks.map((m) => m.id)}::uuid[], ${marks.map((m) => m.kind)}::smallint[],
                             ${marks.map((m) => m.bytes)}::bigint[]) AS x(id, kind, b)),
      locked AS MATERIALIZED (
        SELECT u.table_id, m.kind, m.b FROM table_usage u JOIN m ON m.id = u.table_id
         WHERE m.b > 0 OR u.marked IS NULL OR u.marked > m.kind OR u.lease_until > now()
            OR (m.kind = ${MARK_OPENED}::smallint AND u.touched_at < now() - interval '5 minutes')
         ORDER BY u.table_id
         FOR UPDATE OF u)
      UPDATE table_usage u SET
             written_bytes = u.written_bytes + l.b,
             marked_at = CASE WHEN u.marked IS NULL OR u.marked > l.kind OR u.lease_until > now()
                              THEN clock_timestamp() ELSE u.marked_at END,
             marked = LEAST(u.marked, l.kind),
             touched_at = CASE WHEN l.kind = ${MARK_OPENED}::smallint THEN now() ELSE u.touched_at END
        FROM locked l
       WHERE u.table_id = l.table_id`;
  }

  /** Forgets flush records older than `ageMs` (a retry never comes that late: the replica's memory is long gone). */
  async pruneFlushes(ageMs: number): Promise<void> {
    // Every replica prunes: rows another one is deleting are skipped, never waited for (nor locked in another order).
    await this.db.$executeRaw`
      DELETE FROM usage_flushes f USING (
        SELECT replica, seq FROM usage_flushes WHERE flushed_at < now() - ${ageMs}::int * interval '1 millisecond'
         ORDER BY replica, seq LIMIT 10000 FOR UPDATE SKIP LOCKED) old
       WHERE f.replica = old.replica AND f.seq = old.seq`;
  }

  /**
   * Counters by hour or day in [from, to), with the daily storage figures for days: of one database, or (`databaseId`
   * null) summed over every database (the fleet's history; storage and counts are the sums of the databases' daily
   * figures). Periods nothing was counted or measured in have no row.
   */
  async periods(databaseId: string | null, granularity: 'hour' | 'day', from: Date, to: Date): Promise<PeriodRow[]> {
    const of = databaseId === null ? Prisma.empty : Prisma.sql`database_id = ${databaseId}::uuid AND`;
    const rows =
      granularity === 'hour'
        ? await this.db.$queryRaw<Record<string, unknown>[]>`
            SELECT hour AS start, ${COUNTER_SUMS}, NULL::bigint AS s, NULL::bigint AS cv, NULL::int AS t, NULL::int AS n
              FROM usage_counters
             WHERE ${of} hour >= ${from} AND hour < ${to}
             GROUP BY hour
             ORDER BY hour`
        : await this.db.$queryRaw<Record<string, unknown>[]>`
            WITH c AS (
              SELECT (hour AT TIME ZONE 'UTC')::date AS day, ${COUNTER_SUMS}
                FROM usage_counters
               WHERE ${of} hour >= ${from} AND hour < ${to}
               GROUP BY 1),
            d AS (
              SELECT day, sum(storage_bytes) AS s, sum(current_bytes) AS cv, sum(tables) AS t, sum(namespaces) AS n FROM usage_daily
               WHERE ${of} day >= (${from}::timestamptz AT TIME ZONE 'UTC')::date
                 AND day < (${to}::timestamptz AT TIME ZONE 'UTC')::date
               GROUP BY day)
            SELECT (COALESCE(c.day, d.day)::timestamp AT TIME ZONE 'UTC') AS start, c.r, c.w, c.rw, c.b, c.q, c.th, c.f,
                   d.s, d.cv, d.t, d.n
              FROM c FULL JOIN d ON d.day = c.day
             ORDER BY 1`;
    return rows.map((r) => ({ start: new Date(r.start as Date), ...figures(r) }));
  }

  /**
   * Every live database's usage on one UTC day, by `sort` (descending) then name: keyset-paginated after
   * (sortKey, name).
   */
  async fleet(day: string, sort: FleetSort, after: [number, string] | undefined, take: number): Promise<FleetRow[]> {
    const key = sort === 'storage' ? 'COALESCE(u.storage_bytes, 0)' : 'COALESCE(c.r, 0) + COALESCE(c.w, 0)';
    const afterKey = after ? after[0] : null;
    const afterName = after ? after[1] : null;
    const sql = `
      WITH c AS (
        SELECT database_id, ${COUNTER_SUMS.sql}
          FROM usage_counters
         WHERE hour >= ($1::date)::timestamp AT TIME ZONE 'UTC' AND hour < ($1::date + 1)::timestamp AT TIME ZONE 'UTC'
         GROUP BY database_id),
      f AS (
        SELECT d.name, ${key} AS k, c.r, c.w, c.rw, c.b, c.q, c.th, c.f, u.storage_bytes AS s, u.current_bytes AS cv, u.tables AS t, u.namespaces AS n
          FROM databases d
          LEFT JOIN c ON c.database_id = d.id
          LEFT JOIN usage_daily u ON u.database_id = d.id AND u.day = $1::date)
      SELECT * FROM f
       WHERE $2::numeric IS NULL OR f.k < $2::numeric OR (f.k = $2::numeric AND f.name > $3::text)
       ORDER BY f.k DESC, f.name ASC
       LIMIT $4::int`;
    const rows = await this.db.$queryRawUnsafe<Record<string, unknown>[]>(sql, day, afterKey, afterName, take);
    return rows.map((r) => ({ name: r.name as string, sortKey: num(r.k), ...figures(r) }));
  }

  /** The `limit` databases storing most now (bytes on their stores, as last measured plus written since). */
  async topByStorage(limit: number): Promise<{ name: string; storageBytes: number; currentBytes: number; tables: number }[]> {
    const rows = await this.db.$queryRaw<{ name: string; s: unknown; c: unknown; t: unknown }[]>`
      SELECT d.name, x.s, x.c, (SELECT count(*) FROM tables WHERE database_id = x.database_id) AS t FROM (
        SELECT database_id, sum(bytes) AS s, sum(current_bytes) AS c FROM ${STORED} st GROUP BY database_id
        ORDER BY sum(bytes) DESC LIMIT ${limit}::int) x
      JOIN databases d ON d.id = x.database_id
      ORDER BY x.s DESC, d.name`;
    return rows.map((r) => ({ name: r.name, storageBytes: num(r.s), currentBytes: num(r.c), tables: num(r.t) }));
  }

  /**
   * The database's storage now, as the catalog knows it: its tables' bytes on the store as last measured, plus what
   * writes through the gateway added since (as flushed; UsageMeter holds what is not yet).
   */
  async storageOf(databaseId: string): Promise<number> {
    const rows = await this.db.$queryRaw<{ s: unknown }[]>`
      SELECT COALESCE(sum(bytes), 0) AS s FROM ${STORED} st WHERE database_id = ${databaseId}::uuid`;
    return num(rows[0]?.s);
  }

  async tableCount(databaseId: string): Promise<number> {
    const rows = await this.db.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM tables WHERE database_id = ${databaseId}::uuid`;
    return rows[0].n;
  }

  async namespaceCount(databaseId: string): Promise<number> {
    const rows = await this.db.$queryRaw<
      { n: number }[]
    >`SELECT count(*)::int AS n FROM namespaces WHERE database_id = ${databaseId}::uuid`;
    return rows[0].n;
  }

  /**
   * Serialises, until the unit of work ends, the checks and inserts that count one database's tables or namespaces
   * (two creates at once cannot both take the last place under a quota).
   */
  async lockQuota(databaseId: string, what: 'tables' | 'namespaces'): Promise<void> {
    await this.db.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`quota:${what}:${databaseId}`}))`;
  }

  /**
   * Leases up to `limit` tables due for a scan, none leased by another replica (live lease), most urgent first:
   * marked tables (written through the gateway since their last scan, then opened for writing since; oldest mark
   * first, from the partial index of marked tables); then never scanned; then handed out for writing within the last
   * hour and not scanned for 5 minutes (a namespace-mode writer keeps writing with the handle it opened), or not
   * scanned for `fullScanMs`, longest-unscanned first (from the scanned_at index, in its own order). FOR UPDATE SKIP
   * LOCKED: two replicas claiming at once take different tables. The lease lasts `leaseMs`. Answered in claim order.
   */
  async claimDue(owner: string, limit: number, fullScanMs: number, leaseMs: number): Promise<ClaimedTable[]> {
    const rows = await this.db.$queryRaw<
      { tableId: string; databaseId: string; location: string; claimedAt: string; writtenBytes: unknown }[]
    >`
      WITH marked AS (
        SELECT u.table_id, u.marked, u.marked_at FROM table_usage u
         WHERE u.marked IS NOT NULL AND (u.lease_until IS NULL OR u.lease_until < now())
         ORDER BY u.marked, u.marked_at
         LIMIT ${limit}::int
         FOR UPDATE SKIP LOCKED),
      rest AS (
        SELECT u.table_id, u.scanned_at FROM table_usage u
         WHERE u.marked IS NULL AND (u.lease_until IS NULL OR u.lease_until < now())
           AND (u.scanned_at IS NULL
                OR (u.touched_at > now() - interval '1 hour' AND u.scanned_at < now() - interval '5 minutes')
                OR u.scanned_at < now() - ${fullScanMs}::bigint * interval '1 millisecond')
         ORDER BY u.scanned_at NULLS FIRST
         LIMIT (${limit}::int - (SELECT count(*) FROM marked))
         FOR UPDATE SKIP LOCKED),
      due AS (
        SELECT table_id, row_number() OVER (ORDER BY marked, marked_at) AS n FROM marked
        UNION ALL
        SELECT table_id, ${limit}::int + row_number() OVER (ORDER BY scanned_at NULLS FIRST) FROM rest),
      claimed AS (
        UPDATE table_usage u SET lease_owner = ${owner}, lease_until = now() + ${leaseMs}::int * interval '1 millisecond'
          FROM due WHERE u.table_id = due.table_id
        RETURNING u.table_id, u.database_id, u.written_bytes, due.n)
      SELECT c.table_id AS "tableId", c.database_id AS "databaseId", t.location, now()::timestamptz(3)::text AS "claimedAt",
             c.written_bytes AS "writtenBytes"
        FROM claimed c JOIN tables t ON t.id = c.table_id
       ORDER BY c.n`;
    return rows.map((r) => ({ ...r, writtenBytes: num(r.writtenBytes) }));
  }

  /**
   * Records a table's measured size and gives its lease back (only while the lease is still the caller's). The
   * measurement replaces the estimate it was claimed with: what gateway writes added after the claim stays (until
   * the next measurement, which they made due), so a write the listing may have missed is never dropped. A mark made
   * before the claim is cleared; one made during the measurement stays (the table is due again). Both times are in
   * milliseconds: a mark in the claim's millisecond is cleared, since its writes were committed before its flush began,
   * and so before the listing, which starts after the claim (before, a truncated claim time read such marks as later
   * and measured their tables twice).
   */
  async recordScan(
    c: Pick<ClaimedTable, 'tableId' | 'claimedAt' | 'writtenBytes'>,
    owner: string,
    m: { bytes: number; currentBytes: number; rows: number },
  ): Promise<void> {
    await this.recordScans(owner, [{ ...c, ...m }]);
  }

  /** recordScan for many tables in one statement, their rows locked in table order (as a flush's marks are). */
  async recordScans(
    owner: string,
    scans: Array<Pick<ClaimedTable, 'tableId' | 'claimedAt' | 'writtenBytes'> & { bytes: number; currentBytes: number; rows: number }>,
  ): Promise<void> {
    if (scans.length === 0) return;
    const s = [...scans].sort((a, b) => (a.tableId < b.tableId ? -1 : a.tableId > b.tableId ? 1 : 0));
    await this.db.$executeRaw`
      WITH x AS (
        SELECT * FROM unnest(${s.map((c) => c.tableId)}::uuid[], ${s.map((c) => c.claimedAt)}::timestamptz[],
                             ${s.map((c) => c.writtenBytes)}::bigint[], ${s.map((c) => c.bytes)}::bigint[],
                             ${s.map((c) => c.currentBytes)}::bigint[], ${s.map((c) => c.rows)}::bigint[])
               AS x(id, claimed_at, written, bytes, current_bytes, num_rows)),
      locked AS MATERIALIZED (
        SELECT u.table_id, x.claimed_at, x.written, x.bytes, x.current_bytes, x.num_rows
          FROM table_usage u JOIN x ON x.id = u.table_id
         WHERE u.lease_owner = ${owner}
         ORDER BY u.table_id
         FOR UPDATE OF u)
      UPDATE table_usage u SET total_bytes = l.bytes, current_bytes = l.current_bytes, num_rows = l.num_rows,
             written_bytes = GREATEST(u.written_bytes - l.written, 0), scanned_at = l.claimed_at,
             marked = CASE WHEN u.marked_at > l.claimed_at THEN u.marked END,
             marked_at = CASE WHEN u.marked_at > l.claimed_at THEN u.marked_at END,
             lease_owner = NULL, lease_until = NULL
        FROM locked l
       WHERE u.table_id = l.table_id AND u.lease_owner = ${owner}`;
  }

  /** Gives a lease back without a measurement (the table could not be read; tried again later). */
  async releaseLease(tableId: string, owner: string): Promise<void> {
    await this.db.$executeRaw`
      UPDATE table_usage SET lease_owner = NULL, lease_until = NULL WHERE table_id = ${tableId}::uuid AND lease_owner = ${owner}`;
  }

  /**
   * Writes today's (UTC) storage, table and namespace figures of the given databases, and of up to `staleLimit`
   * others whose figure for today is missing or older than `staleMs`. Returns how many databases were written.
   */
  async snapshotDaily(databaseIds: string[], staleMs: number, staleLimit: number): Promise<number> {
    const rows = await this.db.$queryRaw<{ n: number }[]>`
      WITH pick AS (
        SELECT d.id FROM databases d
         WHERE d.id IN (SELECT (jsonb_array_elements_text(${JSON.stringify(databaseIds)}::jsonb))::uuid)
        UNION
        (SELECT d.id FROM databases d
           LEFT JOIN usage_daily u ON u.database_id = d.id AND u.day = (now() AT TIME ZONE 'UTC')::date
          WHERE u.database_id IS NULL OR u.measured_at < now() - ${staleMs}::int * interval '1 millisecond'
          ORDER BY u.measured_at NULLS FIRST
          LIMIT ${staleLimit}::int)),
      upserted AS (
        INSERT INTO usage_daily AS x (database_id, day, storage_bytes, current_bytes, tables, namespaces, measured_at)
        SELECT p.id, (now() AT TIME ZONE 'UTC')::date,
               COALESCE(s.bytes, 0), COALESCE(s.current_bytes, 0),
               (SELECT count(*) FROM tables WHERE database_id = p.id),
               (SELECT count(*) FROM namespaces WHERE database_id = p.id),
               now()
          FROM pick p
          LEFT JOIN LATERAL (SELECT sum(bytes) AS bytes, sum(current_bytes) AS current_bytes FROM ${STORED} st
                              WHERE st.database_id = p.id) s ON true
         ORDER BY p.id -- replicas' rounds upserting the same databases lock them in one order
        ON CONFLICT (database_id, day) DO UPDATE SET storage_bytes = EXCLUDED.storage_bytes, current_bytes = EXCLUDED.current_bytes,
           tables = EXCLUDED.tables, namespaces = EXCLUDED.namespaces, measured_at = EXCLUDED.measured_at
        RETURNING 1)
      SELECT count(*)::int AS n FROM upserted`;
    return rows[0].n;
  }

  /** Fleet totals now, for the Prometheus gauges (no per-database series). */
  async fleetTotals(): Promise<{ databases: number; tables: number; namespaces: number; storageBytes: number }> {
    const rows = await this.db.$queryRaw<{ d: number; t: number; n: number; s: unknown }[]>`
      SELECT (SELECT count(*)::int FROM databases) AS d, (SELECT count(*)::int FROM tables) AS t,
             (SELECT count(*)::int FROM namespaces) AS n, (SELECT COALESCE(sum(bytes), 0) FROM ${STORED} st) AS s`;
    const r = rows[0];
    return { databases: r.d, tables: r.t, namespaces: r.n, storageBytes: num(r.s) };
  }
}

/** The usage figures of a row whose columns are named r, w, rw, b, q (counters) and s, cv, t, n (daily storage figures). */
function figures(r: Record<string, unknown>) {
  return {
    readRequests: num(r.r),
    writeRequests: num(r.w),
    rowsWritten: num(r.rw),
    bytesIngested: num(r.b),
    queries: num(r.q),
    throttledRequests: num(r.th),
    failedRequests: num(r.f),
    storageBytes: numOrNull(r.s),
    currentVersionBytes: numOrNull(r.cv),
    tables: numOrNull(r.t),
    namespaces: numOrNull(r.n),
  };
}
