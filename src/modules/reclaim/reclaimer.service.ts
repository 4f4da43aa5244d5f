import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../../platform/config/config';
import { UnitOfWork } from '../../platform/db/unit-of-work';
import { TableGarbage } from '../../engine/lance/table-garbage';
import { TableStorage } from '../../engine/storage/table-storage.service';
import { AuditService } from '../audit';
import { MetricsService } from '../../platform/observability/metrics.service';
import { TransactionsService } from '../catalog';
import { PendingLocationsRepository, PendingRow } from '../../platform/cluster/pending-locations.repository';
import { ReplicaIdentity } from '../../platform/cluster/replica-identity';
import { heartbeat, LeasedWorker } from '../../platform/cluster/leased-worker';
import { CommitCompletion } from './commit-completion.service';

/** Why a location was reclaimed (the `reason` of the metrics and of the audit record). */
export type ReclaimReason = 'abandoned_write' | 'unreferenced_files' | 'interrupted_cleanup' | 'interrupted_cascade';

export interface ReclaimRound {
  /** Locations cleaned (folders removed, or a table's unreferenced files removed). */
  locations: number;
  bytes: number;
  /** Records left for a later round (a live writer shares the location, or the table is being written). */
  postponed: number;
  /** Engine commits whose writer died before confirming them, confirmed now (with their change events). */
  commitsCompleted: number;
}

const BATCH = 50;
/** File times and catalog times come from different clocks (and file systems round): a little slack both ways. */
const CLOCK_SLACK_MS = 2_000;

/**
 * The reclaimer. Every RECLAIM_INTERVAL_SECONDS (and once at start) it takes over, through Postgres, the pending
 * locations whose writer has not renewed its heartbeat for RECLAIM_AFTER_SECONDS, and finishes them:
 *  - a fresh folder no table row uses (a create cut off before its registration, a clean-up cut off midway): the
 *    folder is deleted;
 *  - a live table's folder (an in-place write cut off before its commit): only the data files no version of the
 *    table references and that were made while the dead writer lived (TableGarbage);
 *  - a deleted database's folder: deleted, unless a database of that name exists again.
 * It then resumes cascade drops whose replica fell silent (TransactionsService), and completes the bookkeeping of
 * engine commits whose writer died right after committing (CommitCompletion). Nothing a live table row, a live
 * writer's heartbeat or another reclaimer's claim protects is touched. Each clean-up is audited and counted.
 */
@Injectable()
export class Reclaimer implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly log = new Logger('Reclaimer');
  private readonly worker = new LeasedWorker<ReclaimRound>({
    log: this.log,
    failure: 'reclaim round failed',
    result: () => ({ locations: 0, bytes: 0, postponed: 0, commitsCompleted: 0 }),
    tick: (out) => this.round(out),
  });

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repo: PendingLocationsRepository,
    private readonly storage: TableStorage,
    private readonly garbage: TableGarbage,
    private readonly transactions: TransactionsService,
    private readonly audit: AuditService,
    private readonly metrics: MetricsService,
    private readonly replica: ReplicaIdentity,
    private readonly uow: UnitOfWork,
    private readonly commits: CommitCompletion,
  ) {}

  onApplicationBootstrap(): void {
    // A replica that starts after a crash finishes what the crash left without waiting a whole interval.
    this.worker.start(this.config.reclaim.intervalMs, true);
  }

  onApplicationShutdown(): Promise<void> {
    return this.worker.stop();
  }

  /** One round (a round already under way is joined, not doubled). */
  runOnce(): Promise<ReclaimRound> {
    return this.worker.runOnce();
  }

  /**
   * The round's three parts, each on its own: one that fails (a storage error, a catalog hiccup) is logged and the
   * others still run, so a cascade that cannot be resumed never holds back the completion of a dead writer's commit.
   */
  private async round(out: ReclaimRound): Promise<void> {
    const parts: Array<[string, () => Promise<void>]> = [
      ['pending locations', () => this.reclaimLocations(out)],
      ['interrupted cascades', () => this.resumeCascades(out)],
      ['pending commits', () => this.completeCommits(out)],
    ];
    for (const [what, part] of parts) {
      if (this.worker.stopped) return;
      try {
        await part();
      } catch (err) {
        this.log.warn(`reclaim round: ${what} failed: ${(err as Error).message}`);
      }
    }
  }

  private async reclaimLocations(out: ReclaimRound): Promise<void> {
    for (;;) {
      const claimed = await this.uow.run(() => this.repo.claimStale(this.replica.id, this.config.reclaim.afterMs, BATCH));
      const byLocation = new Map<string, PendingRow[]>();
      for (const r of claimed) byLocation.set(r.location, [...(byLocation.get(r.location) ?? []), r]);
      for (const records of byLocation.values()) {
        try {
          await this.reclaim(records, out);
        } catch (err) {
          // Left claimed: another round (here or elsewhere) retries once this claim has aged.
          this.log.warn(`could not reclaim ${records[0].location}: ${(err as Error).message}`);
        }
      }
      if (claimed.length < BATCH || this.worker.stopped) break;
    }
  }

  private async resumeCascades(out: ReclaimRound): Promise<void> {
    for (const t of await this.transactions.claimStale(this.config.reclaim.afterMs, 20)) {
      const done = await this.transactions.resume(t, async (l) => (await this.storage.usage(l)).bytes);
      if (done.removed.length === 0) continue;
      out.locations += done.removed.length;
      out.bytes += done.bytes;
      this.metrics.recordReclaim('interrupted_cascade', done.bytes, done.removed.length);
      await this.audit.record({
        databaseId: t.databaseId,
        databaseName: (await this.repo.databaseNameOf(t.databaseId)) ?? t.databaseId,
        actor: 'reclaimer',
        action: 'storage.reclaim',
        target: `transaction ${t.id}`,
        details: {
          reason: 'interrupted_cascade',
          operation: t.operation,
          locations: done.removed,
          bytes: done.bytes,
          finished: done.succeeded,
        },
      });
    }
  }

  private async completeCommits(out: ReclaimRound): Promise<void> {
    out.commitsCompleted += (await this.commits.run()).completed;
  }

  /** Finishes the claimed records of one location. */
  private async reclaim(records: PendingRow[], out: ReclaimRound): Promise<void> {
    const location = records[0].location;
    const ids = records.map((r) => r.id);
    const lease = heartbeat(() => this.repo.renewClaims(ids, this.replica.id), this.config.reclaim.heartbeatMs);
    try {
      if (await this.repo.liveWriterAt(location, ids, this.config.reclaim.afterMs)) {
        await this.repo.release(ids, this.replica.id);
        out.postponed += records.length;
        return;
      }
      const outcome = await this.clean(records);
      if (outcome === 'postpone') {
        await this.repo.release(ids, this.replica.id);
        out.postponed += records.length;
        return;
      }
      for (const id of ids) await this.repo.deleteOwned(id, this.replica.id);
      if (!outcome) return;
      out.locations += 1;
      out.bytes += outcome.bytes;
      this.metrics.recordReclaim(outcome.reason, outcome.bytes);
      const first = records[0];
      await this.audit.record({
        databaseId: first.databaseId,
        databaseName: first.databaseName,
        actor: 'reclaimer',
        action: 'storage.reclaim',
        target: location,
        requestId: first.requestId ?? undefined,
        details: {
          reason: outcome.reason,
          bytes: outcome.bytes,
          files: outcome.files,
          started_at: first.startedAt.toISOString(),
          last_heartbeat_at: new Date(Math.max(...records.map((r) => r.heartbeatAt.getTime()))).toISOString(),
          request_ids: records.map((r) => r.requestId).filter((r): r is string => !!r),
        },
      });
    } finally {
      lease.stop();
    }
  }

  /** Deletes what the records' dead work left; null when there was nothing to delete (or nothing may be). */
  private async clean(records: PendingRow[]): Promise<{ reason: ReclaimReason; bytes: number; files: number } | null | 'postpone'> {
    const first = records[0];
    const location = first.location;
    if (await this.repo.tableAt(location)) {
      // A live table: its folder stays. A clean-up record here means the location was registered again after its
      // drop; a write record, an in-place write that died before its commit.
      if (!records.some((r) => r.kind === 'write')) return null;
      const finding = await this.garbage.find(location, {
        fromMs: Math.min(...records.map((r) => r.startedAt.getTime())) - CLOCK_SLACK_MS,
        toMs: Math.max(...records.map((r) => r.heartbeatAt.getTime())) + this.config.reclaim.heartbeatMs + CLOCK_SLACK_MS,
        busyAfterMs: Date.now() - this.config.reclaim.afterMs,
      });
      if (finding.kind === 'busy') return 'postpone';
      if (finding.kind === 'unsafe') {
        this.log.warn(`left ${location} as it is: ${finding.reason}`);
        return null;
      }
      if (finding.files.length === 0) return null;
      for (const f of finding.files) await this.storage.removeFile(f.path);
      return { reason: 'unreferenced_files', bytes: finding.files.reduce((n, f) => n + f.size, 0), files: finding.files.length };
    }
    // A database's folder is named after it; table folders always lie inside one.
    if (location === first.databaseName && (await this.repo.databaseNamed(first.databaseName))) {
      this.log.warn(`left ${location} as it is: a database of that name exists again (see npm run admin -- storage scan)`);
      return null;
    }
    const usage = await this.storage.usage(location);
    await this.storage.remove(location);
    if (usage.files === 0) return null;
    return {
      reason: records.some((r) => r.kind === 'cleanup') ? 'interrupted_cleanup' : 'abandoned_write',
      bytes: usage.bytes,
      files: usage.files,
    };
  }
}
