import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { APP_CONFIG, AppConfig } from '../../platform/config/config';
import { LeasedWorker } from '../../platform/cluster/leased-worker';
import { LanceEngine } from '../../engine/lance/lance-engine';
import { TableWriteSignals } from '../catalog';
import { MaintainedTable, MaintenanceRepository } from './maintenance.repository';
import { resolvePolicy } from './maintenance.policy';
import { ScopedStorage } from '../../platform/context/scoped-storage';
import { hintCache } from '../../platform/runtime/hint-cache';

const SWEEP_PAGE = 500;

/**
 * When a table's maintenance job is queued (docs/maintenance.md): after its commits (debounced per table) and on the
 * slow sweep. The queue is the jobs system's: a table's queued job is one row whoever queues it, and one replica
 * runs it under the job's lease, so every replica may trigger and sweep. What a job does is MaintenanceService's.
 */
@Injectable()
export class MaintenanceTriggers implements OnModuleInit, OnApplicationBootstrap, OnApplicationShutdown {
  private readonly log = new Logger('Maintenance');
  /**
   * When this replica last queued (or found queued) the job of a location (gateway commits) or table id (signals):
   * a burst of commits to one table costs one catalog round trip.
   */
  private readonly recent: LRUCache<string, number>;
  /** Set while a maintenance job commits: its own commits trigger nothing. */
  private readonly maintaining = new ScopedStorage<boolean>();
  /** Triggers owed at the end of a delay window (the trailing edge of a burst). */
  private readonly trailing = new Map<string, NodeJS.Timeout>();
  private readonly sweeper = new LeasedWorker<void>({
    log: this.log,
    failure: 'maintenance sweep failed',
    result: () => undefined,
    tick: () => this.sweepAll(),
  });

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repo: MaintenanceRepository,
    private readonly engine: LanceEngine,
    private readonly signals: TableWriteSignals,
  ) {
    this.recent = hintCache<number>(config.tableHintCacheBytes, () => 8);
  }

  onModuleInit(): void {
    this.engine.onWritten((location) => this.committed(location));
    this.signals.on((tableId) => void this.touched(tableId));
  }

  onApplicationBootstrap(): void {
    this.sweeper.start(this.config.maintenance.sweepIntervalMs);
  }

  async onApplicationShutdown(): Promise<void> {
    for (const t of this.trailing.values()) clearTimeout(t);
    this.trailing.clear();
    await this.sweeper.stop();
  }

  /** Runs `fn` as a maintenance job's own work: the commits it makes trigger nothing. */
  quietly<T>(fn: () => Promise<T>): Promise<T> {
    return this.maintaining.run(true, fn);
  }

  /**
   * A commit the gateway made: the table's job is queued. At most once per delay window per table on this replica;
   * a commit inside the window sets a timer for the window's end (the trailing edge), so the last commits of a burst
   * always queue a job after them, even when the job queued at the burst's start has already begun. The job's own
   * commits (inside `quietly`) queue nothing. Never fails.
   */
  async committed(location: string): Promise<void> {
    if (this.maintaining.getStore()) return;
    if (this.debounced(location, () => void this.committed(location))) return;
    try {
      const t = await this.repo.tableAt(location);
      if (!t) return void this.recent.delete(location); // its row is not there yet (its first commit): the next one queues it
      if (await this.enabledFor(t)) await this.repo.enqueue(t, this.config.maintenance.delayMs, 'commit');
    } catch (err) {
      this.recent.delete(location);
      this.log.warn(`could not queue the maintenance of ${location}: ${(err as Error).message}`);
    }
  }

  /** A commit the gateway learned of (namespace-mode writer), debounced as `committed`. Never fails. */
  async touched(tableId: string): Promise<void> {
    if (this.debounced(tableId, () => void this.touched(tableId))) return;
    try {
      const t = await this.repo.tableById(tableId);
      if (!t) return;
      if (await this.enabledFor(t)) await this.repo.enqueue(t, this.config.maintenance.delayMs, 'seen');
    } catch (err) {
      this.recent.delete(tableId);
      this.log.warn(`could not queue the maintenance of table ${tableId}: ${(err as Error).message}`);
    }
  }

  /** The slow sweep now (one under way is joined): every table with data gets its job queued. */
  sweep(): Promise<void> {
    return this.sweeper.runOnce();
  }

  /** Whether the table's policy has automatic maintenance on (a disabled table gets no automatic job at all). */
  private async enabledFor(t: MaintainedTable): Promise<boolean> {
    return resolvePolicy(this.config, await this.repo.policyInputs(t)).enabled.value;
  }

  /**
   * Whether a trigger of `key` falls inside its delay window (then `again` is set to run at the window's end, once);
   * otherwise the window starts now and the caller queues the job.
   */
  private debounced(key: string, again: () => void): boolean {
    const now = Date.now();
    const last = this.recent.get(key);
    const delay = this.config.maintenance.delayMs;
    if (last !== undefined && now - last < delay) {
      if (!this.trailing.has(key)) {
        const timer = setTimeout(
          () => {
            this.trailing.delete(key);
            again();
          },
          last + delay - now + 1,
        );
        timer.unref();
        this.trailing.set(key, timer);
      }
      return true;
    }
    this.recent.set(key, now);
    return false;
  }

  /** One sweep: tables with data, a page at a time (a job with nothing to do ends at once). */
  private async sweepAll(): Promise<void> {
    for (let after: string | null = null; ;) {
      const page = await this.repo.tablesWithData(after, SWEEP_PAGE);
      for (const t of page) if (await this.enabledFor(t)) await this.repo.enqueue(t, 0, 'sweep');
      if (page.length < SWEEP_PAGE) return;
      after = page[page.length - 1].id;
    }
  }
}
