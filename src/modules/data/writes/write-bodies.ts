import * as fs from 'node:fs';
import { Inject, Injectable } from '@nestjs/common';
import { ApiError, Errors } from '../../../platform/http/errors';
import { APP_CONFIG, AppConfig } from '../../../platform/config/config';
import type { PendingWork } from '../../../platform/cluster/pending-locations.service';
import { BufferedIpc, spillWholeStream } from '../../../engine/arrow/arrow-ipc';
import { TableRow, TableWriteLifecycle } from '../../catalog';
import { Body } from '../dataplane.types';
import { COMMIT_MEMORY_FACTOR, discard, metered, Reservation, WriteBudget } from './write-budget';

/** A buffered body as loaded for its commit, with the bytes that arrived for it (metered as ingested). */
export type Loaded = BufferedIpc & { bodyBytes: number };

/** The body, counting the bytes that arrive (its length, `settled` and `beforeCommit` kept). */
export function counting(body: Body): { body: Body; bytes: () => number } {
  let n = 0;
  const wrapped = Object.assign(
    metered(body, (k) => (n += k)),
    { contentLength: body.contentLength, settled: body.settled, beforeCommit: body.beforeCommit },
  );
  return { body: wrapped, bytes: () => n };
}

/**
 * Runs an in-place write recorded as pending. Success, or a refusal of the request (4xx other than a commit
 * conflict), ends the record; any other failure may have left data files in the table's folder before the
 * commit, so the record is left for the reclaimer, which removes the files no version references.
 */
export async function inPlace<T>(work: PendingWork, write: () => Promise<T>): Promise<T> {
  let result: T;
  try {
    work.assertHeld(); // the body may have been slow to arrive
    result = await write();
  } catch (err) {
    if (err instanceof ApiError && err.status < 500 && err.status !== 409) work.done();
    else work.abandon();
    throw err;
  }
  work.done();
  return result;
}

/** Records that a declared table now has data, after its commit. */
export async function markWrittenQuietly(lifecycle: TableWriteLifecycle, row: TableRow): Promise<void> {
  // After a commit nothing may fail the request: the flag is an optimisation, found again from storage later.
  await lifecycle.markWritten(row).catch(() => undefined);
}

/** A write's Arrow body against the write budget: spooled for one commit, admitted, or its refusal settled. */
@Injectable()
export class WriteBodies {
  private readonly limits: AppConfig['arrow'];

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly budget: WriteBudget,
  ) {
    this.limits = config.arrow;
  }

  /**
   * A write whose body is committed at once: refused before anything is read when its Content-Length is over
   * ARROW_BUFFERED_LIMIT_BYTES (413). Its body is spilled to a temporary file while it arrives, each message body
   * reserved from the write budget while it is held; `load` then reserves what the commit costs (the file size ×
   * COMMIT_MEMORY_FACTOR), reads the file into memory for the commit, and keeps the reservation until `fn` ends.
   * Every wait for the budget happens while the write holds none of it (so writes never wait on each other in a
   * circle); past WRITE_BUDGET_WAIT_MS it is a 503 with nothing written. The file and the reservations go when `fn`
   * ends, however it ends.
   */
  async spooled<T>(raw: Body, fn: (load: () => Promise<Loaded>) => Promise<T>): Promise<T> {
    const { body, bytes } = counting(raw);
    const limit = this.limits.bufferedBodyBytes;
    if (body.contentLength !== undefined && body.contentLength > limit) {
      throw Errors.payloadTooLarge(`request body of ${body.contentLength} bytes exceeds the limit of ${limit} bytes`);
    }
    let message: Reservation | undefined;
    let whole: Reservation | undefined;
    let file: string | undefined;
    try {
      file = await this.budget.spillPath();
      const path = file;
      return await fn(async () => {
        const spilled = await spillWholeStream(body, limit, path, {
          hold: async (n) => {
            message = await this.budget.reserve(n);
          },
          free: () => {
            message?.release();
            message = undefined;
          },
        });
        await body.beforeCommit?.(); // the body is in: the request's exactly-once check before anything commits
        whole = await this.budget.reserve(spilled.bytes * COMMIT_MEMORY_FACTOR);
        const buf = await fs.promises.readFile(path);
        await fs.promises.rm(path, { force: true });
        return { schema: spilled.schema, file: buf, rows: spilled.rows, batches: spilled.batches, bodyBytes: bytes() };
      });
    } catch (err) {
      await this.settleRefused(body, err);
      throw err;
    } finally {
      if (file) await fs.promises.rm(file, { force: true }).catch(() => undefined);
      message?.release();
      whole?.release();
    }
  }

  /**
   * A write refused for the budget part-way through its body (the rest is being discarded): answers once the body
   * has arrived (up to ARROW_BUFFERED_LIMIT_BYTES more of it), so that the client, still sending, reads the 503
   * (which its retry needs) instead of a connection cut by the HTTP edge.
   */
  async settleRefused(body: Body, err: unknown): Promise<void> {
    if (err instanceof ApiError && err.status === 503) await body.settled?.(this.limits.bufferedBodyBytes);
  }

  /**
   * Reserves `bytes` of the write budget (waiting for them up to WRITE_BUDGET_WAIT_MS); a refused body is read and
   * discarded first, so that the client reads the 503.
   */
  async admit(body: Body, bytes: number): Promise<Reservation> {
    try {
      return await this.budget.reserve(bytes);
    } catch (err) {
      await discard(body, this.limits.bufferedBodyBytes);
      throw err;
    }
  }
}
