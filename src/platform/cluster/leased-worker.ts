import type { Logger } from '@nestjs/common';

/*
 * The timer loop of the background workers (reclaimer, usage refresher, job runner, purge and maintenance sweeps).
 * Their leases are per catalog row (FOR UPDATE SKIP LOCKED, expiring claims), taken in the tick through each module's
 * repository; a Postgres queue (pg-boss, graphile-worker) would need a `pg` pool with LISTEN/NOTIFY and advisory
 * locks, which the embedded catalog (PGlite, one connection) does not give. See docs/adr/0007-leased-workers.md.
 */

export interface LeasedWorkerOptions<R> {
  /** Where a failed tick is logged (`${failure}: ${message}`, a warning). */
  log: Logger;
  failure: string;
  /** A fresh result for one tick; what the tick has filled in is returned even when it fails midway. */
  result: () => R;
  /** One tick. `worker.stopped` tells a long tick to end early. */
  tick: (out: R) => Promise<void>;
  /** A call while a tick runs: joins it ('join', the default), or joins it and runs one more after it ('rerun'). */
  overlap?: 'join' | 'rerun';
}

/**
 * Runs `tick` every `intervalMs` from start() until stop(), never two at once; a failing tick is logged and the
 * next one runs as usual. runOnce() runs one now (also without start(), as tests and operators do).
 */
export class LeasedWorker<R> {
  private timer?: NodeJS.Timeout;
  private running?: Promise<R>;
  private again = false;
  private halted = false;

  constructor(private readonly opts: LeasedWorkerOptions<R>) {}

  /** Whether stop() was called: ticks end early, and none starts. */
  get stopped(): boolean {
    return this.halted;
  }

  /** Starts the timer, unless `intervalMs` is 0 or less (the worker is off); `now`: a first tick at once. */
  start(intervalMs: number, now = false): void {
    if (intervalMs <= 0 || this.halted) return;
    this.timer = setInterval(() => void this.runOnce(), intervalMs);
    this.timer.unref();
    if (now) setImmediate(() => void this.runOnce());
  }

  /** Stops the timer and waits for the tick under way. */
  async stop(): Promise<void> {
    this.halted = true;
    if (this.timer) clearInterval(this.timer);
    await this.running?.catch(() => undefined);
  }

  /** One tick now (one under way is joined, not doubled); after stop(), an empty result. */
  runOnce(): Promise<R> {
    if (this.halted) return Promise.resolve(this.opts.result());
    if (this.running) {
      if (this.opts.overlap === 'rerun') this.again = true;
      return this.running;
    }
    this.running = this.tick().finally(() => {
      this.running = undefined;
      if (this.again && !this.halted) {
        this.again = false;
        void this.runOnce();
      }
    });
    return this.running;
  }

  private async tick(): Promise<R> {
    const out = this.opts.result();
    try {
      await this.opts.tick(out);
    } catch (err) {
      this.opts.log.warn(`${this.opts.failure}: ${(err as Error).message}`);
    }
    return out;
  }
}

/** Renews a lease every `everyMs` while work holds it (renew's failures are its own to report); stop() ends it. */
export function heartbeat(renew: () => Promise<unknown>, everyMs: number): { stop(): void } {
  const timer = setInterval(() => void renew().catch(() => undefined), everyMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
