import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { HttpAdapterHost, ModuleRef } from '@nestjs/core';
import { performance } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';
import { Counter } from 'prom-client';
import { MetricsService } from '../observability/metrics.service';
import { WRITE_ACTIVITY, WriteActivity } from './allocator-retention';

/** How often the event loop is looked at. */
export const YOUNG_GENERATION_TICK_MS = 1000;
/**
 * Quiet ticks in a row that each make a scavenge. V8 shrinks its new space only at a collection that sees a low
 * allocation rate over its last 5 s, measured from one collection to the next: with the young generation nearly
 * empty a scavenge takes about a millisecond. The first two of them still count the burst (what it allocated since
 * its last collection, then what the first scavenge promoted), so seven more follow: on the seventh, the new space
 * sometimes stayed grown until the next scavenge.
 */
export const QUIET_TICKS = 9;
/**
 * Quiet ticks in a row before the full collection. A full collection in a quiet spell also frees the object shapes
 * (V8 maps) that only the burst's objects used, and V8 throws away the optimized code built for them: about 140
 * functions of the request path (HTTP parser, router, pg driver), re-optimized when traffic returns, at about 0.7 s
 * of the compiler threads' CPU on the 2-core test machine, the first requests running unoptimized meanwhile. Made
 * after 9 quiet seconds, it cost a describe 15-25% more CPU when bursts came every 10-20 s (docs/adr/0008). Traffic
 * with shorter pauses than this keeps its code; a longer pause gets its memory back.
 */
export const FULL_COLLECTION_QUIET_TICKS = 30;
/**
 * A tick whose event loop was busy less than this share of the time is quiet. An idle gateway's own timers (the
 * allocator's and this one's looks, the usage flush, the metrics) keep its loop up to about 1.5% busy, so a lower
 * threshold (1% was tried) kept calling the release off.
 */
export const QUIET_UTILIZATION = 0.05;

/** What the release looks at and does; the process's own by default (tests bring their own). */
export interface YoungGenerationProbes {
  /** The event loop's utilisation (0-1) since the previous call. */
  loopUtilization(): number;
  /** A collection: 'minor' (a scavenge of the young generation) or 'major' (the whole heap). */
  collect(type: 'minor' | 'major'): void;
  /** V8's heap in use, in bytes (garbage included until a collection frees it). */
  heapUsed(): number;
  /** V8's heap held (committed), in bytes: in use, garbage and free space in its pages. */
  heapHeld(): number;
}

/**
 * Heap growth since the last full collection that brings it forward to the QUIET_TICKS-th quiet tick, as writes do:
 * a burst that left this much (a fleet of tenants touched once: 41-74 MiB in use at that tick, a large listing) is
 * worth the re-optimization; the few MiB a catalog read burst promotes are not. Not left to the 30 quiet ticks: V8's
 * own collections of such a heap, and the fleet's flushes, each make a tick busy, and 30 quiet ones in a row may not
 * come for minutes (docs/adr/0008-memory-tuning.md). Growth of the heap in use, or of the heap held: one of V8's own
 * full collections may bring the heap in use back down and keep every page (a fleet touched once: 68 MiB in use,
 * 123 held, RSS +69 MiB a minute later); the held heap is counted from the least it was since that collection (V8
 * gives the pages back at its own next collection, not at ours), and a catalog read burst's grown new space has
 * shrunk again by the QUIET_TICKS-th tick.
 */
export const FULL_COLLECTION_GROWTH_BYTES = 32 * 1024 * 1024;

/**
 * Caches that let many entries go at once (the identity caches' expiry: a fleet's lookups, minutes after its
 * tenants went quiet). Their provider registers under CACHE_EXPIRY and the release finds it at start-up, as
 * allocator retention finds WRITE_ACTIVITY, so the platform imports no feature.
 */
export interface CacheExpiry {
  /** Calls `listener` with the estimated heap bytes of the entries each purge let go. */
  onExpired(listener: (bytes: number) => void): void;
}
export const CACHE_EXPIRY = Symbol('CACHE_EXPIRY');
/**
 * Cache entries let go, in a quiet spell already released, that start another release with its full collection on
 * the QUIET_TICKS-th quiet tick: without traffic nothing else makes a tick busy, and the entries stayed in the heap
 * (10,000 tenants' lookups expired: heap in use 67 → 72 MiB, held 76 against 56 fresh, idle RSS +32 MiB).
 */
export const EXPIRED_GARBAGE_BYTES = 4 * 1024 * 1024;

/**
 * Gives the memory of a burst of work back when the process goes quiet (docs/production.md#memory).
 *
 * scripts/start.sh lets V8's young generation grow to 32 MiB semi-spaces: a catalog request allocates tens of KB (a
 * page of 100 tables about 100 KB, most of it the driver's parsed rows), and every scavenge copies the objects of the
 * ten requests in flight and promotes them into the old generation, so the fewer scavenges the less CPU: a page of
 * tables cost about 30% more with 4 MiB semi-spaces than with 16, and again with 16 than with 32 (measured:
 * docs/adr/0002-v8-gc-flags.md). Two things then stay resident after a burst:
 *  - the new space, grown to 64 MiB for the two semi-spaces, which V8 gives back only at a collection that sees a
 *    low allocation rate over the last 5 s, and an idle process makes no collections;
 *  - the buffers of finished requests (an upload's chunks) that died in the old generation, which only a full
 *    collection frees, and with fewer objects promoted those come seldom: 40-50 MiB were still held 13 s after an
 *    upload.
 * So once a second this looks at the event loop. The first quiet tick after a busy one (the loop busy 5% of the
 * time or more) starts a release: a scavenge on each of the first QUIET_TICKS quiet ticks, so V8 sees the low rate
 * and shrinks the new space, and on the FULL_COLLECTION_QUIET_TICKS-th a full collection, which frees the dead
 * buffers; on the QUIET_TICKS-th already when tables were written since the last one (WRITE_ACTIVITY) or the heap
 * grew by FULL_COLLECTION_GROWTH_BYTES: an upload leaves hundreds of MiB of dead chunks and engine objects, a fleet
 * of tenants touched once about 100 MiB of dead lookups, worth the re-optimization. One release per quiet spell;
 * a busy tick calls it off. The collections' own time is not counted as the loop's activity.
 *
 * The collections are V8's `gc` function, which node hands out only when started with --expose-gc (scripts/start.sh
 * passes it); without it the release is off. Nothing here sets V8 flags at run time. Measurements:
 * docs/adr/0008-memory-tuning.md.
 */
@Injectable()
export class YoungGenerationRelease implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly log = new Logger('YoungGenerationRelease');
  private timer?: NodeJS.Timeout;
  /** Quiet ticks since the last busy one, while a release is due; -1 when none is. */
  private quietTicks = 0;
  private probes?: YoungGenerationProbes;
  /** Whether tables were written since the last full collection. */
  private wrote = false;
  /** The heap in use right after the last full collection (or at start). */
  private usedAfterFull = 0;
  /** The least heap held since the last full collection (or start). */
  private heldFloor = 0;
  /** Cache entries let go since the last full collection (CACHE_EXPIRY), in estimated bytes. */
  private expired = 0;
  private readonly releases: Counter;

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    metrics: MetricsService,
    private readonly moduleRef?: ModuleRef,
  ) {
    this.releases = new Counter({
      name: 'lgw_heap_releases_total',
      help: "Full collections made when the process went quiet, giving back V8's young generation and dead buffers",
      registers: [metrics.registry],
    });
  }

  onApplicationBootstrap(): void {
    if (!this.adapterHost.httpAdapter) return; // CLI: short-lived
    const probes = processProbes();
    if (typeof probes === 'string') {
      this.log.debug(`heap release off: ${probes}`);
      return;
    }
    try {
      // The data plane's write budget, found at start-up as allocator retention finds it (no import of the feature).
      this.moduleRef?.get<WriteActivity>(WRITE_ACTIVITY, { strict: false }).onWriting((writing) => this.onWriting(writing));
    } catch {
      // no data plane: the full collection waits for FULL_COLLECTION_QUIET_TICKS
    }
    try {
      this.moduleRef?.get<CacheExpiry>(CACHE_EXPIRY, { strict: false }).onExpired((bytes) => this.onExpired(bytes));
    } catch {
      // no identity caches (an application without them)
    }
    this.start(probes);
  }

  /** @internal (tests: an upload) Writes started (true) or the last ended (false). */
  onWriting(writing: boolean): void {
    if (writing) this.wrote = true;
  }

  /** @internal (tests) Cache entries of about `bytes` were let go: past EXPIRED_GARBAGE_BYTES, a quiet spell released already is released again. */
  onExpired(bytes: number): void {
    this.expired += bytes;
    if (this.expired >= EXPIRED_GARBAGE_BYTES && this.quietTicks < 0) this.quietTicks = 0;
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
  }

  /** @internal (tests) Runs against these probes; `timer: false`: only the ticks the test makes. */
  start(probes: YoungGenerationProbes, timer = true): void {
    this.probes = probes;
    probes.loopUtilization(); // the first interval starts now
    this.usedAfterFull = probes.heapUsed();
    this.heldFloor = probes.heapHeld();
    if (timer) this.timer = setInterval(() => this.tick(), YOUNG_GENERATION_TICK_MS).unref();
  }

  /** @internal (tests) One look, as the timer makes every YOUNG_GENERATION_TICK_MS; the collection it made, if any. */
  tick(): 'minor' | 'major' | undefined {
    const probes = this.probes;
    if (!probes) return undefined;
    const held = probes.heapHeld();
    if (held < this.heldFloor) this.heldFloor = held;
    if (probes.loopUtilization() >= QUIET_UTILIZATION) {
      this.quietTicks = 0; // a release is due once it is quiet
      return undefined;
    }
    if (this.quietTicks < 0) return undefined; // released already this quiet spell
    this.quietTicks++;
    if (this.quietTicks > QUIET_TICKS && this.quietTicks < FULL_COLLECTION_QUIET_TICKS) return undefined;
    const sooner =
      this.quietTicks === QUIET_TICKS &&
      (this.wrote ||
        this.expired >= EXPIRED_GARBAGE_BYTES ||
        probes.heapUsed() - this.usedAfterFull > FULL_COLLECTION_GROWTH_BYTES ||
        held - this.heldFloor > FULL_COLLECTION_GROWTH_BYTES);
    const type = this.quietTicks >= FULL_COLLECTION_QUIET_TICKS || sooner ? 'major' : 'minor';
    probes.collect(type);
    if (type === 'major') {
      this.quietTicks = -1;
      this.wrote = false;
      this.expired = 0;
      this.usedAfterFull = probes.heapUsed();
      this.heldFloor = probes.heapHeld();
      this.releases.inc();
    }
    probes.loopUtilization(); // the collection's own time is not the process's activity
    return type;
  }
}

/** The probes of this process, or why there are none. */
export function processProbes(): YoungGenerationProbes | string {
  const gc = exposedGc();
  if (!gc) return 'node was started without --expose-gc (scripts/start.sh passes it)';
  let last = performance.eventLoopUtilization();
  return {
    loopUtilization() {
      const now = performance.eventLoopUtilization();
      const since = performance.eventLoopUtilization(now, last);
      last = now;
      return since.utilization;
    },
    heapUsed: () => getHeapStatistics().used_heap_size,
    heapHeld: () => getHeapStatistics().total_heap_size,
    collect(type) {
      if (type === 'minor') gc({ type: 'minor' });
      // Node 20 only: { type: 'major' } left old dead buffers alone, so a plain gc(). On a newer node, pass it and
      // keep it if the real-process case of test/unit/young-generation-release.test.ts still passes.
      else gc();
    },
  };
}

type GcFn = (options?: { type?: 'minor' | 'major' }) => void;

function exposedGc(): GcFn | undefined {
  const gc = (globalThis as { gc?: GcFn }).gc;
  return typeof gc === 'function' ? gc : undefined;
}
