import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { Counter, Gauge } from 'prom-client';
import { Jemalloc } from '../../common/jemalloc';
import { APP_CONFIG, AppConfig } from '../../config/config';
import { MetricsService } from '../observability/metrics.service';
import { WriteBudget } from './write-budget';

/** How often retention looks at the allocator. */
export const RETENTION_TICK_MS = 250;
/** No more large allocations than this per tick counts as no engine activity. */
const QUIET_ALLOCATIONS_PER_TICK = 8;
/** After this long without engine activity, what is kept goes back to the system. */
export const RETENTION_QUIET_MS = 1000;
/** Less than this kept is not worth a purge. */
const MIN_PURGE_BYTES = 4 * 1024 * 1024;

/**
 * Keeps the engine's freed read buffers for the next read, and hands write memory back as before (README "Memory").
 *
 * jemalloc, as scripts/start.sh configures it, returns freed pages to the system within about a second (the
 * oversize arena, for buffers of 16 MiB and more, at once). That bounds write memory, but a brute-force vector scan
 * frees and maps again its whole working set on every query: 5,000-6,000 page faults per k=10 query over 115k
 * 128-d vectors, against about 500 when freed pages are kept, and the query ran 1.3-1.5 × in-process instead of
 * 1.1-1.2 × (2026-11-26). So, while no write holds write memory (WriteBudget), every arena keeps its freed pages
 * (dirty decay -1) and this service hands them back itself: when more than ALLOCATOR_RETAIN_BYTES are kept, and
 * once the engine has been quiet for a second (no large allocations). While writes hold write memory, every arena
 * decays as configured again, so an upload's peak is what it was; when the last write ends, what it left is purged.
 *
 * Only with jemalloc preloaded and ALLOCATOR_RETAIN_BYTES > 0; otherwise nothing changes. Purges run on the libuv
 * pool, never on the event loop.
 */
@Injectable()
export class AllocatorRetention implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly log = new Logger('AllocatorRetention');
  private je?: Jemalloc;
  private timer?: NodeJS.Timeout;
  private writing = false;
  private purging = false;
  private lastLarge = -1;
  private quietSince = Date.now();
  private writeDecayMs = 1000;
  private writeOversizeDecayMs = 0;
  private retained = 0;
  private readonly purges: Counter<'reason'>;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly budget: WriteBudget,
    private readonly adapterHost: HttpAdapterHost,
    metrics: MetricsService,
  ) {
    const self = () => this;
    new Gauge({
      name: 'lgw_allocator_retained_bytes',
      help: "Freed memory jemalloc keeps for the engine's next reads (absent without allocator retention)",
      registers: [metrics.registry],
      collect() {
        if (self().active) this.set(self().retained);
      },
    });
    this.purges = new Counter({
      name: 'lgw_allocator_purges_total',
      help: 'Freed memory handed back to the system by allocator retention: reason cap, quiet or writes-ended',
      labelNames: ['reason'] as const,
      registers: [metrics.registry],
    });
  }

  /** Whether retention runs in this process. */
  get active(): boolean {
    return this.je !== undefined;
  }

  onApplicationBootstrap(): void {
    if (!this.adapterHost.httpAdapter || this.config.allocatorRetainBytes === 0) return; // CLI, or switched off
    const je = Jemalloc.open();
    if (typeof je === 'string') {
      this.log.debug(`allocator retention off: ${je}`);
      return;
    }
    try {
      this.writeDecayMs = je.configuredDirtyDecayMs();
      // jemalloc itself purges the oversize arena at once whenever the configured decay is positive.
      this.writeOversizeDecayMs = this.writeDecayMs > 0 ? 0 : this.writeDecayMs;
      je.setDirtyDecay(-1, -1);
    } catch (err) {
      this.log.warn(`allocator retention off: ${(err as Error).message}`);
      return;
    }
    this.je = je;
    this.budget.onWriting((writing) => this.onWriting(writing));
    this.timer = setInterval(() => this.tick(), RETENTION_TICK_MS).unref();
    this.log.log(`allocator retention on (jemalloc ${je.version.split('-')[0]}, up to ${this.config.allocatorRetainBytes} bytes kept between reads)`);
  }

  onModuleDestroy(): void {
    this.stop();
  }

  /** Stops looking and gives jemalloc back its own decay. */
  private stop(): void {
    clearInterval(this.timer);
    const je = this.je;
    this.je = undefined;
    try {
      je?.setDirtyDecay(this.writeDecayMs, this.writeOversizeDecayMs);
    } catch {
      /* nothing more to do */
    }
  }

  private onWriting(writing: boolean): void {
    const je = this.je;
    if (!je) return;
    this.writing = writing;
    try {
      if (writing) je.setDirtyDecay(this.writeDecayMs, this.writeOversizeDecayMs);
      else {
        je.setDirtyDecay(-1, -1);
        this.purge('writes-ended');
      }
    } catch (err) {
      this.log.warn(`allocator retention off: ${(err as Error).message}`);
      this.stop();
    }
  }

  /** @internal (tests) One look at the allocator, as the timer makes every RETENTION_TICK_MS. */
  tick(now = Date.now()): void {
    const je = this.je;
    if (!je || this.writing) return;
    try {
      const large = je.largeAllocations();
      if (this.lastLarge < 0 || large - this.lastLarge > QUIET_ALLOCATIONS_PER_TICK) this.quietSince = now;
      this.lastLarge = large;
      this.retained = je.dirtyBytes();
      if (this.retained > this.config.allocatorRetainBytes) this.purge('cap');
      else if (this.retained >= MIN_PURGE_BYTES && now - this.quietSince >= RETENTION_QUIET_MS) this.purge('quiet');
    } catch (err) {
      this.log.warn(`allocator retention off: ${(err as Error).message}`);
      this.stop();
    }
  }

  private purge(reason: string): void {
    if (!this.je || this.purging) return;
    this.purging = true;
    this.purges.inc({ reason });
    this.je
      .purge()
      .catch((err: Error) => this.log.warn(`allocator purge failed: ${err.message}`))
      .finally(() => {
        this.purging = false;
      });
  }
}
