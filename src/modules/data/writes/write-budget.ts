import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { Errors } from '../../../platform/http/errors';
import { APP_CONFIG, AppConfig } from '../../../platform/config/config';
import type { Body } from '../dataplane.types';

/**
 * What committing a body of N bytes costs in memory: the body itself, loaded for the engine, and the engine's own
 * copies while it decodes and writes it (measured: a 128 MB IPC file handed to the native `add`/`createTable` raised
 * the process's peak by about 1.9 × 128 MB above the buffer itself). A commit reserves N × this.
 */
export const COMMIT_MEMORY_FACTOR = 3;
/** What a refused write is told to wait before retrying (the official clients retry 503 with their own backoff). */
export const WRITE_RETRY_AFTER_S = 1;
/** Spill files of a process that died are removed at start-up once they have not been written to for this long. */
const STALE_SPILL_MS = 60 * 60 * 1000;
const SPILL_PREFIX = 'write-';
/** Writes waiting for the budget at once; more are refused at once (each holds a connection while it waits). */
export const MAX_WAITING_WRITES = 256;

interface Waiter {
  bytes: number;
  admit: () => void;
  timer?: NodeJS.Timeout;
}

/**
 * Bytes of Arrow bodies held (or about to be held) in memory by one write, taken from the process-wide budget.
 * `grow` takes more as bytes arrive (a body without Content-Length); `release` gives all of it back (idempotent).
 */
export class Reservation {
  private released = false;

  constructor(
    private readonly budget: WriteBudget,
    private held: number,
  ) {}

  get bytes(): number {
    return this.held;
  }

  /** Takes `n` more bytes at once, or throws 503 "Slow down" (and keeps what it had) when they do not fit. */
  grow(n: number): void {
    if (n <= 0 || this.released) return;
    this.budget.take(n, this.held);
    this.held += n;
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.budget.give(this.held);
    this.held = 0;
  }
}

/**
 * The process-wide budget for in-flight write bytes (WRITE_MEMORY_BUDGET_BYTES): what writes may hold in memory at
 * once. A write reserves bytes before it holds them and gives them back when it no longer does, however it ends:
 * insert, merge_insert and overwrite reserve each message of their body while they read it (the body goes to a
 * spill file), then the file size × COMMIT_MEMORY_FACTOR for the commit (the engine's native write takes one
 * in-memory Arrow IPC file); a streamed create reserves about two chunks.
 *
 * A reservation that does not fit waits (first come, first served; it holds nothing meanwhile, and the client's
 * body waits unread in the socket) up to WRITE_BUDGET_WAIT_MS, then the write is refused with 503 "Slow down" and
 * Retry-After, with nothing written. One made while nothing else is reserved is always granted (the body limits
 * still apply), so a body larger than the budget is slow, never refused forever.
 */
@Injectable()
export class WriteBudget implements OnModuleInit {
  private readonly log = new Logger('WriteBudget');
  private readonly limit: number;
  private readonly waitMs: number;
  private used = 0;
  private readonly waiting: Waiter[] = [];
  private readonly listeners: Array<(writing: boolean) => void> = [];
  private writing = false;
  private dirReady?: Promise<void>;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    this.limit = config.arrow.writeMemoryBudgetBytes;
    this.waitMs = config.arrow.writeBudgetWaitMs;
  }

  /** Bytes currently reserved by writes in flight. */
  get inFlightBytes(): number {
    return this.used;
  }

  get budgetBytes(): number {
    return this.limit;
  }

  /**
   * Tells `listener` when writes start holding write memory (true: nothing was reserved before) and when the last
   * reservation is given back (false). The allocator's retention (allocator-retention.ts) listens.
   */
  onWriting(listener: (writing: boolean) => void): void {
    this.listeners.push(listener);
  }

  /** Writes waiting for the budget. */
  get waitingWrites(): number {
    return this.waiting.length;
  }

  /**
   * Reserves `bytes` for a new write: at once when they fit and nobody waits before it, else after waiting its turn
   * for at most WRITE_BUDGET_WAIT_MS; then (or with too many waiting) 503 "Slow down" with Retry-After.
   */
  async reserve(bytes: number): Promise<Reservation> {
    if (this.waiting.length === 0 && this.fits(bytes, 0)) {
      this.add(bytes);
      return new Reservation(this, bytes);
    }
    if (this.waitMs === 0 || this.waiting.length >= MAX_WAITING_WRITES) throw this.busy();
    await new Promise<void>((resolve, reject) => {
      const w: Waiter = { bytes, admit: resolve };
      w.timer = setTimeout(() => {
        const i = this.waiting.indexOf(w);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(this.busy());
        // A large write that gave up may have been what held back smaller ones behind it.
        this.admitWaiting();
      }, this.waitMs);
      this.waiting.push(w);
    });
    return new Reservation(this, bytes);
  }

  private fits(n: number, alreadyHeld: number): boolean {
    return this.used - alreadyHeld === 0 || this.used + n <= this.limit;
  }

  private busy() {
    return Errors.slowDown(
      `the gateway is busy with other writes (${this.used} of ${this.limit} bytes of write memory in use); retry later`,
      WRITE_RETRY_AFTER_S,
    );
  }

  /** Admits waiting writes in order while the first one fits. */
  private admitWaiting(): void {
    while (this.waiting.length > 0 && this.fits(this.waiting[0].bytes, 0)) {
      const w = this.waiting.shift()!;
      clearTimeout(w.timer);
      this.add(w.bytes);
      w.admit();
    }
  }

  /** @internal (Reservation) */
  take(n: number, alreadyHeld: number): void {
    if (!this.fits(n, alreadyHeld)) throw this.busy();
    this.add(n);
  }

  /** @internal (Reservation) */
  give(n: number): void {
    this.used = Math.max(0, this.used - n);
    this.admitWaiting();
    this.tell();
  }

  private add(n: number): void {
    this.used += n;
    this.tell();
  }

  /** Tells the listeners when `used > 0` changed since they were last told. */
  private tell(): void {
    const writing = this.used > 0;
    if (writing === this.writing) return;
    this.writing = writing;
    for (const l of this.listeners) {
      try {
        l(writing);
      } catch (err) {
        this.log.warn(`a write-activity listener failed: ${(err as Error).message}`);
      }
    }
  }

  /** A fresh spill file path (the folder is created on first use); the caller removes the file. */
  async spillPath(): Promise<string> {
    const dir = this.config.arrow.spillDir;
    this.dirReady ??= fs.promises.mkdir(dir, { recursive: true, mode: 0o700 }).then(() => undefined);
    try {
      await this.dirReady;
    } catch (err) {
      this.dirReady = undefined;
      throw err;
    }
    return path.join(dir, `${SPILL_PREFIX}${process.pid}-${randomBytes(8).toString('hex')}.arrow`);
  }

  /** Spill files left by a process that died (not written to for an hour) are removed at start-up. */
  async onModuleInit(): Promise<void> {
    const dir = this.config.arrow.spillDir;
    let names: string[];
    try {
      names = await fs.promises.readdir(dir);
    } catch {
      return;
    }
    const now = Date.now();
    for (const name of names) {
      if (!name.startsWith(SPILL_PREFIX)) continue;
      const file = path.join(dir, name);
      try {
        const st = await fs.promises.stat(file);
        if (now - st.mtimeMs > STALE_SPILL_MS) await fs.promises.rm(file, { force: true });
      } catch (err) {
        this.log.warn(`could not remove stale spill file ${name}: ${(err as Error).message}`);
      }
    }
  }
}

/** The body, counting each chunk against `onBytes` as it arrives (which may throw to stop the upload). */
export function metered(source: Body, onBytes: (n: number) => void): Body {
  return {
    [Symbol.asyncIterator]: () => {
      const it = source[Symbol.asyncIterator]();
      return {
        next: async () => {
          const r = await it.next();
          if (!r.done) onBytes(typeof r.value === 'string' ? Buffer.byteLength(r.value) : r.value.length);
          return r;
        },
        return: async (value?: unknown) => (it.return ? it.return(value) : { done: true as const, value: undefined }),
      } as AsyncIterator<Buffer | Uint8Array | string>;
    },
  };
}

/**
 * Reads and discards a refused body (up to `limit` bytes), so that the client, still sending, reads the answer
 * instead of a reset connection. Past `limit` the rest is left to the HTTP edge (which drains a little, then cuts).
 */
export async function discard(source: Body, limit: number): Promise<void> {
  const it = source[Symbol.asyncIterator]();
  let seen = 0;
  try {
    for (;;) {
      const r = await it.next();
      if (r.done) return;
      seen += typeof r.value === 'string' ? Buffer.byteLength(r.value) : r.value.length;
      if (seen > limit) return;
    }
  } catch {
    // The client went away: nothing left to discard.
  } finally {
    await it.return?.().catch(() => undefined);
  }
}
