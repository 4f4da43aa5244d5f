import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { HttpAdapterHost, ModuleRef } from '@nestjs/core';
import { Counter, Gauge } from 'prom-client';
import { Jemalloc } from './jemalloc';
import { APP_CONFIG, AppConfig } from '../config/config';
import { MetricsService } from '../observability/metrics.service';

/**
 * Tells retention when writes hold write memory (true when the first starts, false when the last ends). The data
 * plane's write budget provides it under WRITE_ACTIVITY; retention finds it at start-up, so the platform does not
 * import the feature.
 */
export interface WriteActivity {
  onWriting(listener: (writing: boolean) => void): void;
}
export const WRITE_ACTIVITY = Symbol('WRITE_ACTIVITY');

/** How often retention looks at the allocator. */
export const RETENTION_TICK_MS = 250;
/** No more large allocations than this per tick counts as no engine activity. */
const QUIET_ALLOCATIONS_PER_TICK = 8;
/** After this long without engine activity, what is kept goes back to the system. */
export const RETENTION_QUIET_MS = 1000;
/** Less than this kept is not worth a purge. */
const MIN_PURGE_BYTES = 4 * 1024 * 1024;

/**
 * Keeps the engine's freed read buffers for the next read, and hands write memory back as before
 * (docs/production.md#memory).
 *
 * jemalloc, as scripts/start.sh configures it, returns freed pages to the system within about 0.1 s (the oversize
 * arena, for buffers of 16 MiB and more, at once). That bounds write memory, but a brute-force vector scan then frees
 * and maps again its whole working set on every query: about ten times the page faults, and a slower query (measured:
 * docs/adr/0001-jemalloc-allocator.md). So, while no write holds write memory (WRITE_ACTIVITY), every arena keeps its
 * freed pages (dirty decay -1, background threads stopped: keep()) and this service hands them back itself: when
 * more than ALLOCATOR_RETAIN_BYTES are kept, and once the process has been quiet for a second (at most a few
 * allocations of 16 KiB or more per tick, anywhere in the process: under steady traffic it is never quiet, and what is
 * kept stays up to the cap, which is checked every tick, so it is a soft bound). While writes hold write memory (the
 * write budget: insert, merge_insert, overwrite, streamed creates), every arena decays as configured again, and what
 * reads left kept is purged when the first write starts, so an upload's peak is what it was; when the last write
 * ends, what it left is purged. Other engine work (index builds, compaction, update, delete) runs under retention.
 *
 * Only with jemalloc preloaded, ALLOCATOR_RETAIN_BYTES > 0 and a WRITE_ACTIVITY provider; otherwise nothing changes.
 * Measurements and what was tried instead: docs/adr/0008-memory-tuning.md. Every change of decay and
 * every purge runs on the libuv pool (setting a decay of 0 purges at once), one after another in the order asked.
 */
@Injectable()
export class AllocatorRetention implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly log = new Logger('AllocatorRetention');
  private je?: Jemalloc;
  private timer?: NodeJS.Timeout;
  private writing = false;
  /** The allocator operations asked for, run one after another on the libuv pool. */
  private ops: Promise<void> = Promise.resolve();
  /** Purges asked for and not yet done: a tick asks for none while one is on its way. */
  private purgesAhead = 0;
  private lastLarge = -1;
  private quietSince = Date.now();
  private writeDecayMs = 1000;
  private writeOversizeDecayMs = 0;
  private retained = 0;
  /** Whether jemalloc started with background threads: they are stopped while keeping (keep()). */
  private backgroundThreads = false;
  private readonly purges: Counter<'reason'>;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly adapterHost: HttpAdapterHost,
    metrics: MetricsService,
    private readonly moduleRef: ModuleRef,
  ) {
    const self = () => this;
    new Gauge({
      name: 'lgw_allocator_retained_bytes',
      help: "Freed memory jemalloc keeps for the engine's next reads, at the last look (0 without allocator retention)",
      registers: [metrics.registry],
      collect() {
        this.set(self().active ? self().retained : 0);
      },
    });
    this.purges = new Counter({
      name: 'lgw_allocator_purges_total',
      help: 'Freed memory handed back to the system by allocator retention: reason cap, quiet, writes-started or writes-ended',
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
    let writes: WriteActivity;
    try {
      writes = this.moduleRef.get<WriteActivity>(WRITE_ACTIVITY, { strict: false });
    } catch {
      this.log.debug('allocator retention off: no WRITE_ACTIVITY provider');
      return;
    }
    const je = Jemalloc.open();
    if (typeof je === 'string') {
      this.log.debug(`allocator retention off: ${je}`);
      return;
    }
    try {
      this.writeDecayMs = je.configuredDirtyDecayMs();
      this.backgroundThreads = je.backgroundThreads();
    } catch (err) {
      this.log.warn(`allocator retention off: ${(err as Error).message}`);
      return;
    }
    // jemalloc itself purges the oversize arena at once whenever the configured decay is positive.
    this.writeOversizeDecayMs = this.writeDecayMs > 0 ? 0 : this.writeDecayMs;
    this.je = je;
    this.enqueue(() => this.keep(je));
    writes.onWriting((writing) => this.onWriting(writing));
    this.timer = setInterval(() => this.tick(), RETENTION_TICK_MS).unref();
    this.log.log(
      `allocator retention on (jemalloc ${je.version.split('-')[0]}, up to ${this.config.allocatorRetainBytes} bytes kept between reads)`,
    );
  }

  onModuleDestroy(): Promise<void> {
    this.stop();
    return this.ops;
  }

  /** @internal (tests) Resolves when every allocator operation asked for so far is done. */
  settled(): Promise<void> {
    return this.ops;
  }

  /** @internal (tests) No more ticks from the timer: the test makes its own. */
  pauseTimer(): void {
    clearInterval(this.timer);
  }

  /** Stops looking and gives jemalloc back its own decay. */
  private stop(): void {
    clearInterval(this.timer);
    const je = this.je;
    if (!je) return;
    this.enqueue(() => this.decay(je));
    this.je = undefined;
  }

  /**
   * Keeps freed pages (dirty decay -1), with jemalloc's background threads stopped: with nothing to decay they sleep
   * without a deadline, and every thread that frees memory then wakes one (about 28 µs of their CPU per catalog
   * request, and wake-ups on the event loop: ADR 0008). While keeping, purges are this service's.
   */
  private async keep(je: Jemalloc): Promise<void> {
    await je.setDirtyDecay(-1, -1);
    if (this.backgroundThreads) await je.setBackgroundThreads(false);
  }

  /** Decays as configured, with the background threads jemalloc started with. */
  private async decay(je: Jemalloc): Promise<void> {
    if (this.backgroundThreads) await je.setBackgroundThreads(true);
    await je.setDirtyDecay(this.writeDecayMs, this.writeOversizeDecayMs);
  }

  private onWriting(writing: boolean): void {
    const je = this.je;
    if (!je) return;
    this.writing = writing;
    if (writing) {
      this.enqueue(() => this.decay(je));
      // What reads left kept would otherwise decay only gradually, under the upload's own growing memory (a gateway
      // never quiet kept about 95 MiB into each upload: docs/performance.md). Handed back now instead.
      if (this.keptNow(je) >= MIN_PURGE_BYTES) this.purge('writes-started');
    } else {
      this.enqueue(() => this.keep(je));
      this.purge('writes-ended');
      this.lastLarge = -1; // the writes' allocations are not the reads' activity
    }
  }

  /** The freed memory the arenas keep at this moment (0 when the allocator cannot say). */
  private keptNow(je: Jemalloc): number {
    try {
      return je.stats().dirtyBytes;
    } catch {
      return 0;
    }
  }

  /** @internal (tests) One look at the allocator, as the timer makes every RETENTION_TICK_MS. */
  tick(now = Date.now()): void {
    const je = this.je;
    if (!je || this.writing) return;
    try {
      const { dirtyBytes, largeAllocations } = je.stats();
      if (this.lastLarge < 0 || largeAllocations - this.lastLarge > QUIET_ALLOCATIONS_PER_TICK) this.quietSince = now;
      this.lastLarge = largeAllocations;
      this.retained = dirtyBytes;
    } catch (err) {
      this.log.warn(`allocator retention off: ${(err as Error).message}`);
      this.stop();
      return;
    }
    if (this.purgesAhead > 0) return;
    if (this.retained > this.config.allocatorRetainBytes) this.purge('cap');
    else if (this.retained >= MIN_PURGE_BYTES && now - this.quietSince >= RETENTION_QUIET_MS) this.purge('quiet');
  }

  private purge(reason: string): void {
    const je = this.je;
    if (!je) return;
    this.purgesAhead++;
    this.enqueue(async () => {
      try {
        this.purges.inc({ reason });
        await je.purge();
      } finally {
        this.purgesAhead--;
      }
    });
  }

  private enqueue(op: () => Promise<void>): void {
    this.ops = this.ops.then(op).catch((err: Error) => this.log.warn(`allocator retention: ${err.message}`));
  }
}
