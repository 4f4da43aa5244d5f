import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import { Logger } from '@nestjs/common';
import { Errors } from '../../platform/http/errors';

/** Heap of the worker that first decodes every uploaded schema: above what any schema within the limits needs. */
export const SCHEMA_DECODE_HEAP_MB = 128;
/** Longest a schema decode may take in that worker. */
export const SCHEMA_DECODE_TIMEOUT_MS = 10_000;
/**
 * How long the worker stays up with no upload to check. It holds a V8 heap of its own (about 10 MiB resident); starting
 * it again takes about 65 ms on the 2-core test machine, paid by the first upload after a quiet spell.
 */
export const SCHEMA_WORKER_IDLE_MS = 10_000;

export interface SchemaGuardOptions {
  heapMb: number;
  timeoutMs: number;
  /** Stop the worker after this long without a job (default SCHEMA_WORKER_IDLE_MS). */
  idleMs?: number;
}

type Reply = { ok: true; fields: number } | { ok: false; error: string };

const bad = (msg: string) => Errors.invalidInput(`invalid Arrow IPC stream: ${msg}`);

/**
 * Defence in depth behind arrow-verify.ts: before the gateway decodes an uploaded schema message with apache-arrow in
 * its own thread, a worker thread with its own heap limit (`resourceLimits`) decodes it first, under a time limit. If
 * the verifier ever lets through something apache-arrow cannot decode within bounds, the worker runs out of memory
 * or time and is terminated — the process and every other request carry on — and the upload is a 400.
 *
 * One warm worker, reused, serves every request (started on first use, restarted after it is killed, stopped after
 * SCHEMA_WORKER_IDLE_MS without a job): a round trip costs about 0.13 ms on the 2-core test machine against 0.09 ms
 * for the decode itself, while starting a worker per request would cost 65-120 ms. Jobs are handled one at a time; a
 * verified schema decodes in well under a millisecond, so a queue forms only behind a decode that is being killed.
 */
export class SchemaDecodeGuard {
  private readonly log = new Logger('ArrowSchemaGuard');
  private worker?: Promise<Worker | undefined>;
  private queue: Promise<unknown> = Promise.resolve();
  private unavailable = false;
  /** Jobs queued or running. */
  private jobs = 0;
  private idleTimer?: NodeJS.Timeout;

  constructor(private readonly opts: SchemaGuardOptions = { heapMb: SCHEMA_DECODE_HEAP_MB, timeoutMs: SCHEMA_DECODE_TIMEOUT_MS }) {}

  /**
   * Resolves when apache-arrow decodes `meta` (a schema message's metadata) within the limits; a 400 otherwise.
   * `timeoutMs` overrides the guard's time limit for this decode.
   */
  check(meta: Uint8Array, timeoutMs = this.opts.timeoutMs): Promise<void> {
    this.jobs++;
    clearTimeout(this.idleTimer);
    const job = this.queue
      .then(() => this.run(meta, timeoutMs))
      .finally(() => {
        if (--this.jobs === 0) this.idleTimer = setTimeout(() => void this.stopIdle(), this.opts.idleMs ?? SCHEMA_WORKER_IDLE_MS).unref();
      });
    this.queue = job.catch(() => undefined);
    return job;
  }

  /** Whether a worker is up or starting (tests). */
  get running(): boolean {
    return this.worker !== undefined;
  }

  /** Stops an idle worker; the next upload starts one again. */
  private async stopIdle(): Promise<void> {
    const w = await this.worker?.catch(() => undefined);
    if (this.jobs > 0 || !w) return;
    this.worker = undefined;
    await w.terminate();
  }

  /** Stops the worker (tests; the worker never keeps the process alive anyway). */
  async close(): Promise<void> {
    clearTimeout(this.idleTimer);
    const w = await this.worker?.catch(() => undefined);
    this.worker = undefined;
    await w?.terminate();
  }

  private start(): Promise<Worker | undefined> {
    if (this.unavailable) return Promise.resolve(undefined);
    this.worker ??= new Promise<Worker | undefined>((resolve) => {
      let w: Worker;
      try {
        w = new Worker(path.join(__dirname, 'arrow-schema-worker.js'), {
          resourceLimits: { maxOldGenerationSizeMb: this.opts.heapMb, maxYoungGenerationSizeMb: 16, stackSizeMb: 4 },
          stdout: true,
          stderr: true,
        });
      } catch (err) {
        resolve(this.disable(err));
        return;
      }
      const onError = (err: Error) => resolve(this.disable(err));
      w.once('error', onError);
      // Ready once apache-arrow is loaded (its first message), so loading never counts against a job's time limit.
      w.once('message', () => {
        w.off('error', onError);
        // Idle, the worker never keeps the process alive; while a job runs it does (see run).
        w.unref();
        resolve(w);
      });
    });
    return this.worker;
  }

  /** The worker cannot be started at all (e.g. its file is missing): schemas are then decoded in-process only. */
  private disable(err: unknown): undefined {
    this.unavailable = true;
    this.worker = undefined;
    this.log.error(`schema decode worker unavailable, decoding in-process only: ${(err as Error).message}`);
    return undefined;
  }

  private async run(meta: Uint8Array, timeoutMs: number): Promise<void> {
    const w = await this.start();
    if (!w) return;
    // A copy with its own ArrayBuffer, moved to the worker (the request's chunk may be much larger than the message).
    const copy = new Uint8Array(meta);
    w.ref();
    await new Promise<void>((resolve, reject) => {
      const done = () => {
        w.unref();
        clearTimeout(timer);
        w.off('message', onMessage);
        w.off('error', onError);
        w.off('exit', onExit);
      };
      const killed = (why: string) => {
        done();
        this.worker = undefined;
        void w.terminate();
        this.log.warn(`schema decode worker stopped (${why}); the upload is refused, the worker restarts on next use`);
      };
      const onMessage = (m: Reply) => {
        done();
        if (m.ok) resolve();
        else reject(bad(`unreadable schema (${m.error})`));
      };
      const onError = (err: Error & { code?: string }) => {
        killed(err.code ?? err.message);
        reject(
          err.code === 'ERR_WORKER_OUT_OF_MEMORY'
            ? bad(`decoding the schema exceeded the limit of ${this.opts.heapMb} MiB`)
            : bad(`the schema could not be decoded (${err.message})`),
        );
      };
      const onExit = (code: number) => {
        killed(`exit ${code}`);
        reject(bad('the schema could not be decoded'));
      };
      const timer = setTimeout(() => {
        killed('time limit');
        reject(bad(`decoding the schema exceeded the time limit of ${timeoutMs} ms`));
      }, timeoutMs);
      w.on('message', onMessage);
      w.once('error', onError);
      w.once('exit', onExit);
      w.postMessage(copy, [copy.buffer]);
    });
  }
}

/** The process's guard: one worker however many gateways or requests. */
export const schemaGuard = new SchemaDecodeGuard();
