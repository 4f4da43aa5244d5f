import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../../platform/config/config';
import { LanceEngine } from '../../engine/lance/lance-engine';
import { TableStorage } from '../../engine/storage/table-storage.service';
import { MetricsService } from '../../platform/observability/metrics.service';
import { ReplicaIdentity } from '../../platform/cluster/replica-identity';
import { LeasedWorker } from '../../platform/cluster/leased-worker';
import { ClaimedTable, UsageMeter, UsageRepository } from '../metering';

/** A table's size as measured (table_usage.total_bytes, current_bytes, num_rows). */
export interface Measured {
  bytes: number;
  currentBytes: number;
  rows: number;
}

export interface RefreshRound {
  /** Tables whose statistics were re-read. */
  scanned: number;
  /** Tables that could not be read (left for a later round). */
  failed: number;
  /** Databases whose figures for today were written. */
  databases: number;
}

/** Tables claimed at once (at least USAGE_REFRESH_CONCURRENCY), their measurements recorded in one statement. */
const BATCH = 50;
/** A claimed table not finished within this is free again for any replica (its refresher died or hung). */
const LEASE_MS = 5 * 60_000;
/** Today's figures of a database nothing changed in are rewritten at most this often (its tables re-read or not). */
const DAILY_STALE_MS = 5 * 60_000;
const DAILY_PER_ROUND = 500;
/** Flush records are kept this long (a retry comes within seconds). */
const FLUSH_RECORD_AGE_MS = 24 * 3600_000;

/**
 * The storage refresher (docs/usage-and-quotas.md). Namespace-mode clients write table data themselves, and old
 * versions and indices stay on the store, so storage is measured from the store itself: every USAGE_REFRESH_INTERVAL_SECONDS a replica leases, through
 * Postgres (FOR UPDATE SKIP LOCKED, leases that expire), the tables due for a scan — never scanned, written or handed
 * out for writing since their last scan, or not scanned for USAGE_FULL_SCAN_HOURS — measures them (the bytes of every
 * object under the table's location on its store, and the current version's bytes and rows) and records that in
 * place of the estimate of what gateway writes added since the last measurement; then it rewrites today's per-database figures. A round re-reads at most its
 * share of USAGE_REFRESH_TABLES_PER_MINUTE, so a million tables are worked through over time, not at once.
 */
@Injectable()
export class UsageRefresher implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly log = new Logger('UsageRefresher');
  private readonly worker = new LeasedWorker<RefreshRound>({
    log: this.log,
    failure: 'storage refresh round failed',
    result: () => ({ scanned: 0, failed: 0, databases: 0 }),
    tick: (out) => this.round(out),
  });

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repo: UsageRepository,
    private readonly engine: LanceEngine,
    private readonly storage: TableStorage,
    private readonly replica: ReplicaIdentity,
    private readonly metrics: MetricsService,
    private readonly meter: UsageMeter,
  ) {}

  onApplicationBootstrap(): void {
    this.worker.start(this.config.usage.refreshIntervalMs);
  }

  onApplicationShutdown(): Promise<void> {
    return this.worker.stop();
  }

  /** Tables one round may re-read: this replica's share of the per-minute budget. */
  get perRound(): number {
    const interval = this.config.usage.refreshIntervalMs || 60_000;
    return Math.max(1, Math.ceil((this.config.usage.refreshTablesPerMinute * interval) / 60_000));
  }

  /** One round (a round under way is joined, not doubled). */
  runOnce(): Promise<RefreshRound> {
    return this.worker.runOnce();
  }

  /**
   * A table's size: `bytes`, every object under its location on its store (all versions' manifests and data files,
   * indices, deletion files, transaction files, branches, staged multipart parts), from one recursive listing; and
   * beside it the current version's data bytes and rows, from the engine's statistics on a handle of its own, closed
   * at once (thousands of tables measured in a round must not push the hot tables' kept read handles out of their
   * cache). A declared table without data yet has no current version (0).
   */
  async measure(location: string): Promise<Measured> {
    const files = await this.storage.listFiles(location);
    const bytes = files.reduce((n, f) => n + f.size, 0);
    // A committed version is a manifest under `_versions` (what TableStorage.hasData looks for), found in the listing.
    const versions = `${location}/_versions/`;
    if (!files.some((f) => f.path.startsWith(versions) && f.path.endsWith('.manifest'))) return { bytes, currentBytes: 0, rows: 0 };
    const h = await this.engine.open(location);
    try {
      const s = await h.table.stats();
      return { bytes, currentBytes: s.totalBytes, rows: s.numRows };
    } catch (err) {
      throw this.engine.translate(err);
    } finally {
      h.close();
    }
  }

  private async round(out: RefreshRound): Promise<void> {
    const changed = new Set<string>();
    // What this replica's writes added goes to the catalog first, so that the measurements below replace it (and
    // its quota checks stop counting it on top of them).
    await this.meter.flush().catch(() => undefined);
    const concurrency = this.config.usage.refreshConcurrency;
    const batch = Math.max(BATCH, concurrency);
    let budget = this.perRound;
    while (budget > 0 && !this.worker.stopped) {
      const asked = Math.min(batch, budget);
      const claimed = await this.repo.claimDue(this.replica.id, asked, this.config.usage.fullScanMs, LEASE_MS);
      budget -= claimed.length;
      const scans: Array<ClaimedTable & Measured> = [];
      // `concurrency` measurements at once (each mostly waits on the store: a listing, a manifest read), in claim order.
      let next = 0;
      const measureNext = async (): Promise<void> => {
        while (next < claimed.length && !this.worker.stopped) {
          const c = claimed[next++];
          try {
            scans.push({ ...c, ...(await this.measure(c.location)) });
          } catch (err) {
            out.failed++;
            this.metrics.usageTablesScanned.inc({ outcome: 'failed' });
            this.log.warn(`could not read the statistics of ${c.location}: ${(err as Error).message}`);
            await this.repo.releaseLease(c.tableId, this.replica.id).catch(() => undefined);
          }
        }
      };
      await Promise.all(Array.from({ length: Math.min(concurrency, claimed.length) }, measureNext));
      // A batch's measurements in one statement (leases of tables left unmeasured by a stop expire).
      await this.repo.recordScans(this.replica.id, scans);
      for (const c of scans) changed.add(c.databaseId);
      out.scanned += scans.length;
      this.metrics.usageTablesScanned.inc({ outcome: 'scanned' }, scans.length);
      if (claimed.length < asked) break;
    }
    out.databases = await this.repo.snapshotDaily([...changed], DAILY_STALE_MS, DAILY_PER_ROUND);
    await this.repo.pruneFlushes(FLUSH_RECORD_AGE_MS);
    this.metrics.fleet = await this.repo.fleetTotals();
  }
}
