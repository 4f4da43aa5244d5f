import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../../platform/config/config';
import { UnitOfWork } from '../../platform/db/unit-of-work';
import { LanceEngine } from '../../engine/lance/lance-engine';
import { TableStorage } from '../../engine/storage/table-storage.service';
import { MetricsService } from '../../platform/observability/metrics.service';
import { ReplicaIdentity } from '../../platform/cluster/pending-locations.service';
import { CounterRow, UsageRepository, zeroRow } from './usage.repository';

const HOUR_MS = 3600_000;
const DONE = Promise.resolve();

interface Batch {
  seq: number;
  rows: CounterRow[];
  /** Tables opened for writing (describe with a write key). */
  opened: string[];
  /** Tables written through the gateway. */
  written: string[];
  /** Bytes gateway commits added, by table location. */
  grown: Map<string, number>;
  /** The same bytes by database name (what quota checks add to the catalog's figure until the batch is applied). */
  grownByDatabase: Map<string, number>;
}

/**
 * Usage metering in memory (docs/usage-and-quotas.md). Requests, rows written, bytes ingested and queries are
 * counted per database and UTC hour in this process (no catalog write per request); every USAGE_FLUSH_INTERVAL_SECONDS
 * the counts are cut into a batch with the next sequence number of this replica and added to the catalog in one
 * transaction, together with a (replica, seq) row: a batch whose commit succeeded but whose answer was lost is sent
 * again with the same number and adds nothing. A batch that fails stays and is retried first (the counts made
 * meanwhile wait for the next batch). A crash loses what was counted since the last flush that committed; a shutdown
 * flushes first.
 *
 * The bytes each gateway commit adds to a table's store (LanceEngine.onStored) travel the same way, added to the
 * table's `written_bytes` (the estimate of what was written since its last measurement); until its batch is applied
 * they are held here by database, so that this replica's quota checks count them at once.
 *
 * Tables due for a measurement travel with them: a commit through the gateway (LanceEngine.onWritten, `written`) or
 * an open for writing (`touch`, a describe with a write key) is a Set add here, deduplicated until the flush, which
 * marks the tables in the catalog (table_usage.marked: the storage refresher measures them first) and writes no row
 * of a table already marked.
 */
@Injectable()
export class UsageMeter implements OnModuleInit, OnApplicationBootstrap, OnApplicationShutdown {
  private readonly log = new Logger('UsageMeter');
  /** The rows counted since the last flush (a database's row of an hour the clock stepped back into may repeat: the flush adds them up). */
  private rows: CounterRow[] = [];
  /** The current hour's rows by database (the hot path: one Map lookup per count). */
  private hourRows = new Map<string, CounterRow>();
  private hourStart = 0;
  /** Tables opened for writing, and written, since the last flush: a Set add per call, nothing else. */
  private opened = new Set<string>();
  private writtenIds = new Set<string>();
  private grown = new Map<string, number>();
  private grownByDatabase = new Map<string, number>();
  private pending?: Batch;
  private seq = 0;
  private timer?: NodeJS.Timeout;
  private flushing?: Promise<void>;
  private readonly enabled: boolean;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repo: UsageRepository,
    private readonly uow: UnitOfWork,
    private readonly replica: ReplicaIdentity,
    private readonly metrics: MetricsService,
    private readonly engine: LanceEngine,
    private readonly storage: TableStorage,
  ) {
    this.enabled = config.usage.metering;
  }

  onModuleInit(): void {
    if (!this.enabled) return;
    this.engine.onStored((location, bytes) => this.stored(location, bytes));
    // Every commit the gateway makes (writes, index builds, maintenance) marks its table written, bytes or not.
    this.engine.onWritten((location) => {
      this.wroteAt(location);
      return DONE;
    });
  }

  onApplicationBootstrap(): void {
    if (!this.enabled) return;
    this.timer = setInterval(() => void this.flush().catch(() => undefined), this.config.usage.flushIntervalMs);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.flush().catch((err) => this.log.warn(`usage not flushed at shutdown: ${(err as Error).message}`));
  }

  private row(databaseId: string): CounterRow {
    const now = Date.now();
    if (now < this.hourStart || now >= this.hourStart + HOUR_MS) {
      this.hourStart = Math.floor(now / HOUR_MS) * HOUR_MS;
      this.hourRows = new Map();
    }
    let r = this.hourRows.get(databaseId);
    if (!r) {
      r = zeroRow(databaseId, this.hourStart);
      this.hourRows.set(databaseId, r);
      this.rows.push(r);
    }
    return r;
  }

  /**
   * An answered request of a database (read: needed the read role; else write), and how it ended: `throttled`,
   * refused by its rate limit; `failed`, answered with another 5xx status. Both are counted in the read or write
   * requests as well.
   */
  request(databaseId: string, write: boolean, outcome?: 'throttled' | 'failed'): void {
    if (!this.enabled) return;
    const r = this.row(databaseId);
    if (write) r.writeRequests++;
    else r.readRequests++;
    if (outcome === 'throttled') r.throttledRequests++;
    else if (outcome === 'failed') r.failedRequests++;
  }

  /** A committed write of `rows` rows from `bytes` bytes of Arrow IPC body. */
  ingested(databaseId: string, rows: number, bytes: number): void {
    if (!this.enabled) return;
    const r = this.row(databaseId);
    r.rowsWritten += rows;
    r.bytesIngested += bytes;
  }

  /** A query answered (vector, full-text or plain). */
  query(databaseId: string): void {
    if (!this.enabled) return;
    this.row(databaseId).queries++;
  }

  /**
   * A table handed out for writing (a describe with a write key: a namespace-mode writer may now write it directly):
   * its size is due for a re-read. On the read path, so it costs a Set add: the next flush marks the table in the
   * catalog once (not again while it stays marked), with no statement per describe.
   */
  touch(tableId: string): void {
    if (!this.enabled) return;
    this.opened.add(tableId);
  }

  /** A table written through the gateway (or by its maintenance, or undropped): measured before any other. */
  written(tableId: string): void {
    if (!this.enabled) return;
    this.writtenIds.add(tableId);
  }

  /** A commit through the gateway to the table at `location` (its row is found by location at the flush). */
  private wroteAt(location: string): void {
    if (!this.grown.has(location)) this.grown.set(location, 0);
  }

  /** A commit through the gateway added about `bytes` bytes to the table at `location`. */
  stored(location: string, bytes: number): void {
    if (!this.enabled || !(bytes > 0)) return;
    this.grown.set(location, (this.grown.get(location) ?? 0) + bytes);
    const db = this.storage.databaseOf(location);
    this.grownByDatabase.set(db, (this.grownByDatabase.get(db) ?? 0) + bytes);
  }

  /** Bytes this replica saw written to a database's tables that the catalog's figures do not hold yet. */
  unflushedBytes(databaseName: string): number {
    return (this.grownByDatabase.get(databaseName) ?? 0) + (this.pending?.grownByDatabase.get(databaseName) ?? 0);
  }

  /** Adds what was counted to the catalog now (a flush already under way is joined, then this one runs). */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing.catch(() => undefined);
    this.flushing = this.flushAll().finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  /**
   * A batch a failed flush left goes first, then what was counted until now, once: what is counted meanwhile waits
   * for the next flush. (Draining until nothing new had been counted never ended under steady traffic: one flush
   * transaction after another, about 10% of the CPU of a replica serving 1,000 catalog reads a second.)
   */
  private async flushAll(): Promise<void> {
    if (this.pending) await this.apply(this.pending);
    if (this.rows.length === 0 && this.opened.size === 0 && this.writtenIds.size === 0 && this.grown.size === 0) return;
    this.pending = {
      seq: ++this.seq,
      rows: this.rows,
      opened: [...this.opened],
      written: [...this.writtenIds],
      grown: this.grown,
      grownByDatabase: this.grownByDatabase,
    };
    this.rows = [];
    this.hourRows = new Map();
    this.opened = new Set();
    this.writtenIds = new Set();
    this.grown = new Map();
    this.grownByDatabase = new Map();
    await this.apply(this.pending);
  }

  /** Adds one batch in one transaction; it stays pending (and is retried first) until that commits. */
  private async apply(batch: Batch): Promise<void> {
    try {
      const applied = await this.uow.run(() =>
        this.repo.applyFlush(this.replica.id, batch.seq, batch.rows, batch.opened, [...batch.grown], batch.written),
      );
      this.metrics.usageFlushes.inc({ outcome: applied ? 'applied' : 'already_applied' });
    } catch (err) {
      this.metrics.usageFlushes.inc({ outcome: 'failed' });
      this.log.warn(`usage flush ${batch.seq} failed (kept, retried at the next flush): ${(err as Error).message}`);
      throw err;
    }
    this.pending = undefined;
  }
}
