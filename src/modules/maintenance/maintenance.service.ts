import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import type * as lancedb from '@lancedb/lancedb';
import { APP_CONFIG, AppConfig } from '../../platform/config/config';
import { Errors } from '../../platform/http/errors';
import { LanceEngine } from '../../engine/lance/lance-engine';
import { TableStorage } from '../../engine/storage/table-storage.service';
import { AuditService } from '../audit';
import { ClaimedJob, JobRunContext, JobsService } from '../jobs';
import { MetricsService } from '../../platform/observability/metrics.service';
import { TablesService } from '../catalog';
import { TenantContext } from '../identity';
import { UsageMeter } from '../metering';
import { MAINTENANCE_JOB, MaintainedTable, MaintenanceRepository, tableIdOf } from './maintenance.repository';
import { MaintenancePolicy, resolvePolicy } from './maintenance.policy';
import { MaintenanceTriggers } from './maintenance.triggers';

/** The job types: `maintenance` (automatic: whichever of the others is due) and the three a caller may ask for. */
export const MAINTENANCE_TYPES = [MAINTENANCE_JOB, 'compact', 'optimize_indices', 'cleanup'] as const;
export type MaintenanceType = (typeof MAINTENANCE_TYPES)[number];

/** Times the engine's optimize is tried when a concurrent commit makes it give up. */
const COMMIT_ATTEMPTS = 6;

/** What maintenance reads of a table before and after it runs. */
export interface TableState {
  version: number;
  fragments: number;
  smallFragments: number;
  rows: number;
  indices: number;
  unindexedRows: number;
  versions: Array<{ version: number; timestamp: number }>;
  taggedVersions: number[];
  branches: string[];
}

const isConflict = (err: unknown) =>
  /conflict|retryable|concurrent|commit.*(fail|retry)|preempt|not found.*manifest/i.test(String((err as Error)?.message ?? err));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Table maintenance (docs/maintenance.md): after commits (debounced), on a slow sweep (both queued by
 * MaintenanceTriggers) and on demand, a job of the jobs system compacts small fragments, adds unindexed rows to the
 * table's indices and removes versions older than the retention, through the engine's one entry point for all three
 * (`optimize`). Policies come from the server, the database, the namespace and the table (resolvePolicy).
 */
@Injectable()
export class MaintenanceService implements OnModuleInit {
  private readonly log = new Logger('Maintenance');
  /** The maintenance job of each table running here (the next one waits for it). */
  private readonly tableLocks = new Map<string, Promise<void>>();

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repo: MaintenanceRepository,
    private readonly jobs: JobsService,
    private readonly engine: LanceEngine,
    private readonly storage: TableStorage,
    private readonly tables: TablesService,
    private readonly audit: AuditService,
    private readonly metrics: MetricsService,
    private readonly triggers: MaintenanceTriggers,
    private readonly meter: UsageMeter,
  ) {}

  onModuleInit(): void {
    for (const type of MAINTENANCE_TYPES) this.jobs.register(type, (job, ctx) => this.run(type, job, ctx));
  }

  // ------------------------------------------------------------------ requests

  /** A table's effective policy, each setting with the level it came from. */
  async policyOf(t: TenantContext, id: string[]): Promise<{ table_id: string[]; policy: MaintenancePolicy }> {
    const table = await this.tableOf(t, id);
    return { table_id: id, policy: resolvePolicy(this.config, await this.repo.policyInputs(table)) };
  }

  /** Runs a maintenance job of a table now (a job of the jobs system), or answers what a cleanup would remove. */
  async runNow(
    t: TenantContext,
    id: string[],
    type: Exclude<MaintenanceType, 'maintenance'> | 'all',
    opts: { dryRun?: boolean; retentionSeconds?: number },
  ) {
    const table = await this.tableOf(t, id);
    if (!(await this.storage.hasData(table.location))) throw Errors.invalidInput(`table '${id.join('.')}' has no data yet (declared only)`);
    if (opts.dryRun) {
      if (type !== 'cleanup') throw Errors.invalidInput('dry_run is only for type cleanup');
      this.audit.nothingChanged();
      return this.dryRun(table, opts.retentionSeconds);
    }
    const jobType = type === 'all' ? MAINTENANCE_JOB : type;
    const jobId = await this.jobs.submit(
      t,
      id,
      jobType,
      {
        maintenance: true,
        table_uuid: table.id,
        trigger: 'request',
        table: table.name,
        table_id: id,
        ...(type === 'all' ? { all: true } : {}),
        ...(opts.retentionSeconds !== undefined ? { retention_seconds: opts.retentionSeconds } : {}),
      },
      { queue: true },
    );
    return { job_id: jobId };
  }

  private async tableOf(t: TenantContext, id: string[]): Promise<MaintainedTable> {
    const row = await this.tables.get(t, id);
    const table = await this.repo.tableById(row.id);
    if (!table) throw Errors.tableNotFound(id.join('.'));
    return table;
  }

  // ------------------------------------------------------------------ the jobs

  private async run(type: MaintenanceType, job: ClaimedJob, ctx: JobRunContext): Promise<Record<string, unknown>> {
    const started = Date.now();
    const end = (outcome: string) => {
      this.metrics.maintenanceRuns.inc({ type, outcome });
      this.metrics.maintenanceDuration.observe({ type }, (Date.now() - started) / 1000);
    };
    try {
      // One maintenance job of a table at a time on this replica (a cleanup removes manifests another one may read).
      const r = await this.exclusive(String(job.spec.table_uuid ?? job.tableId.join('\u001f')), () => this.runJob(type, job, ctx));
      end(String(r.outcome));
      return r;
    } catch (err) {
      end('failed');
      throw err;
    }
  }

  private async exclusive<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.tableLocks.get(key) ?? Promise.resolve();
    const p = prev.then(fn, fn);
    const tail = p.then(
      () => undefined,
      () => undefined,
    );
    this.tableLocks.set(key, tail);
    try {
      return await p;
    } finally {
      if (this.tableLocks.get(key) === tail) this.tableLocks.delete(key);
    }
  }

  private async runJob(type: MaintenanceType, job: ClaimedJob, ctx: JobRunContext): Promise<Record<string, unknown>> {
    const t = await this.repo.tableById(String(job.spec.table_uuid ?? ''));
    if (!t || tableIdOf(t).join('\u001f') !== job.tableId.join('\u001f'))
      return { outcome: 'skipped', reason: 'the table no longer exists' };
    if (!(await this.storage.hasData(t.location))) return { outcome: 'skipped', reason: 'the table has no data' };
    const policy = resolvePolicy(this.config, await this.repo.policyInputs(t));
    const automatic = type === MAINTENANCE_JOB && job.spec.automatic === true;
    if (automatic && !policy.enabled.value) return { outcome: 'skipped', reason: `maintenance is disabled (${policy.enabled.source})` };
    const retentionSeconds =
      typeof job.spec.retention_seconds === 'number' ? job.spec.retention_seconds : policy.cleanup_retention_seconds.value;

    const before = await this.inspect(t.location);
    const now = Date.now();
    // A run asked for with type `all` runs all three whatever the thresholds say.
    const all = type === MAINTENANCE_JOB && !automatic;
    const compact =
      type === 'compact' || (type === MAINTENANCE_JOB && (all || before.smallFragments >= policy.compact_min_fragments.value));
    const index =
      type === 'optimize_indices' ||
      (type === MAINTENANCE_JOB && before.indices > 0 && (all || before.unindexedRows >= policy.index_min_unindexed_rows.value));
    const blocked = this.cleanupBlocked(t, before);
    const due = before.versions.some((v) => v.version !== before.version && v.timestamp < now - retentionSeconds * 1000);
    const cleanup = (type === 'cleanup' || (type === MAINTENANCE_JOB && (all || due))) && !blocked;
    const ran = [...(compact ? ['compact'] : []), ...(index ? ['optimize_indices'] : []), ...(cleanup ? ['cleanup'] : [])];
    const base = {
      table_id: job.tableId,
      policy: Object.fromEntries(Object.entries(policy).map(([k, v]) => [k, v.value])),
      fragments_before: before.fragments,
      small_fragments_before: before.smallFragments,
      unindexed_rows_before: before.unindexedRows,
      versions_before: before.versions.length,
      ...(blocked && (type === 'cleanup' || type === MAINTENANCE_JOB) ? { cleanup_skipped: blocked } : {}),
    };
    if (!ran.length) return { outcome: 'nothing_to_do', ran, ...base };

    const cutoff = cleanup ? this.cutoffOf(before, now - retentionSeconds * 1000) : 1;
    // Catalog-managed versions leave the catalog before their manifests: it never lists a version that is gone.
    let versionRowsRemoved = 0;
    if (cleanup && t.managed) {
      const tagged = new Set(before.taggedVersions);
      const doomed = before.versions
        .filter((v) => v.timestamp < cutoff && v.version !== before.version && !tagged.has(v.version))
        .map((v) => v.version);
      versionRowsRemoved = await this.repo.deleteVersions(t.id, doomed);
    }
    await ctx.beforeCommit();
    const audit = await this.audit.beforeCommit();
    let stats: lancedb.OptimizeStats;
    let attempts: number;
    try {
      ({ stats, attempts } = await this.optimize(t.location, cutoff));
    } catch (err) {
      await audit.failed();
      throw err;
    }
    // What compaction and cleanup freed leaves the database's storage figure at the table's next measurement.
    this.meter.written(t.id);
    const after = await this.inspect(t.location);
    if (t.managed) versionRowsRemoved += await this.forgetMissingVersions(t, after);
    const result = {
      outcome: 'done',
      ran,
      ...base,
      fragments_after: after.fragments,
      fragments_merged: stats.compaction.fragmentsRemoved,
      fragments_added: stats.compaction.fragmentsAdded,
      unindexed_rows_after: after.unindexedRows,
      versions_after: after.versions.length,
      versions_removed: stats.prune.oldVersionsRemoved,
      bytes_reclaimed: stats.prune.bytesRemoved,
      ...(cleanup ? { cleanup_before_millis: cutoff } : {}),
      ...(t.managed ? { version_rows_removed: versionRowsRemoved } : {}),
      version: after.version,
      attempts,
      duration_ms: Date.now() - (job.startedAt?.getTime() ?? Date.now()),
    };
    this.metrics.maintenanceBytesReclaimed.inc(stats.prune.bytesRemoved);
    this.metrics.maintenanceFragmentsMerged.inc(stats.compaction.fragmentsRemoved);
    await audit.committed({
      ran,
      fragments_merged: result.fragments_merged,
      versions_removed: result.versions_removed,
      bytes_reclaimed: result.bytes_reclaimed,
      version: result.version,
    });
    return result;
  }

  /**
   * Why a cleanup of this table may not run (or undefined): another table reads this one's files (a shallow clone),
   * its own files are another table's (it is a clone), or it has branches (their versions refer to main's files).
   */
  private cleanupBlocked(t: MaintainedTable, s: TableState): string | undefined {
    if (t.cloneSource) return "a shallow clone reads this table's files";
    if (t.clone) return 'this table is a shallow clone (its data files belong to its source)';
    if (s.branches.length) return `the table has branches (${s.branches.length}): their versions refer to main's files`;
    return undefined;
  }

  /** The cleanup cut-off: versions committed before it go, unless tagged (the engine refuses to remove a tagged one). */
  private cutoffOf(s: TableState, retentionCutoff: number): number {
    let cutoff = retentionCutoff;
    const byVersion = new Map(s.versions.map((v) => [v.version, v.timestamp]));
    for (const v of s.taggedVersions) {
      const ts = byVersion.get(v);
      if (ts !== undefined && ts < cutoff) cutoff = ts;
    }
    return Math.max(1, cutoff);
  }

  /**
   * The engine's optimize: compaction, index optimization and the removal of versions committed before `cutoff`
   * (1: none) in one call. A concurrent commit it cannot reconcile with makes it give up: it is tried again on the
   * latest version, a few times.
   */
  private async optimize(location: string, cutoff: number): Promise<{ stats: lancedb.OptimizeStats; attempts: number }> {
    return this.triggers.quietly(() =>
      this.engine.withTable(location, async (table) => {
        for (let attempt = 1; ; attempt++) {
          try {
            return { stats: await table.optimize({ cleanupOlderThan: new Date(cutoff), deleteUnverified: false }), attempts: attempt };
          } catch (err) {
            if (attempt >= COMMIT_ATTEMPTS || !isConflict(err)) throw err;
            this.log.debug(`optimize of ${location} met a concurrent commit (attempt ${attempt}): retrying`);
            await sleep(50 * 2 ** attempt);
            await table.checkoutLatest();
          }
        }
      }),
    );
  }

  /** Removes the catalog rows of versions whose manifests are gone (pruned here, or by a namespace-mode cleanup). */
  private async forgetMissingVersions(t: MaintainedTable, s: TableState): Promise<number> {
    const present = new Set(s.versions.map((v) => v.version));
    const missing = (await this.repo.listedVersions(t.id)).filter((v) => !present.has(v));
    return this.repo.deleteVersions(t.id, missing);
  }

  /** What maintenance reads of a table: fragments, unindexed rows, versions, tags and branches. */
  async inspect(location: string): Promise<TableState> {
    return this.engine.readTable(location, async (table) => {
      const stats = await table.stats();
      const indices = await table.listIndices();
      let unindexedRows = 0;
      for (const i of indices) unindexedRows += (await table.indexStats(i.name))?.numUnindexedRows ?? 0;
      const versions = (await table.listVersions()).map((v) => ({ version: v.version, timestamp: v.timestamp.getTime() }));
      const tags = await (await table.tags()).list();
      const branches = Object.keys(await (await table.branches()).list());
      return {
        version: await table.version(),
        fragments: stats.fragmentStats.numFragments,
        smallFragments: stats.fragmentStats.numSmallFragments,
        rows: stats.numRows,
        indices: indices.length,
        unindexedRows,
        versions,
        taggedVersions: [...new Set(Object.values(tags).map((x) => x.version))],
        branches,
      };
    });
  }

  /** What a cleanup would remove now: the versions, and at most how many bytes (the store's beyond the latest version's). */
  private async dryRun(t: MaintainedTable, retentionSeconds?: number) {
    const policy = resolvePolicy(this.config, await this.repo.policyInputs(t));
    const retention = retentionSeconds ?? policy.cleanup_retention_seconds.value;
    const s = await this.inspect(t.location);
    const blocked = this.cleanupBlocked(t, s);
    const cutoff = this.cutoffOf(s, Date.now() - retention * 1000);
    const tagged = new Set(s.taggedVersions);
    const doomed = blocked ? [] : s.versions.filter((v) => v.timestamp < cutoff && v.version !== s.version && !tagged.has(v.version));
    const files = await this.storage.listFiles(t.location).catch(() => []);
    const onStore = files.reduce((n, f) => n + f.size, 0);
    const live = await this.engine.readTable(t.location, async (table) => (await table.stats()).totalBytes);
    return {
      dry_run: true as const,
      cleanup_allowed: !blocked,
      ...(blocked ? { reason: blocked } : {}),
      retention_seconds: retention,
      cleanup_before_millis: cutoff,
      versions_to_remove: doomed.map((v) => ({ version: v.version, timestamp_millis: v.timestamp })),
      versions_kept: s.versions.length - doomed.length,
      tagged_versions: s.taggedVersions,
      bytes_on_store: onStore,
      current_version_bytes: live,
      reclaimable_bytes_at_most: doomed.length ? Math.max(0, onStore - live) : 0,
    };
  }
}
