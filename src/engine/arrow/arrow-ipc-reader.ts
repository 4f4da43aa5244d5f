import { Schema } from 'apache-arrow';
import { Errors } from '../../platform/http/errors';
import { SchemaDecodeGuard, schemaGuard } from './arrow-schema-guard';
import { checkBatch, checkEntries, IpcLimits, UNTRUSTED_LIMITS, verifyMessage } from './arrow-verify';
import { bad, bufferSizes, CONTINUATION, decodeSchema, IpcMessage } from './arrow-ipc-message';

/** A message header larger than this is not a real Arrow message (the schema of 10 000 columns is < 2 MiB). */
export const MAX_METADATA_BYTES = 16 << 20;
/** One record batch is held whole while it is read: a larger one is refused (413), whatever the body limit. */
export const MAX_MESSAGE_BODY_BYTES = 1024 ** 3;
/** Dictionary batches are kept for the whole upload (every chunk handed to the engine repeats them). */
export const MAX_DICTIONARY_MESSAGES = 10_000;
export const MAX_DICTIONARY_BYTES = 256 << 20;

/**
 * Pulls exact byte counts out of an async byte source, holding at most one message's worth of bytes. Counts every
 * byte against `limit` (the caller's body limit; Fastify's does not apply to streamed bodies) and answers 413 past it.
 */
class ByteQueue {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private total = 0;
  private done = false;
  private readonly it: AsyncIterator<Buffer | Uint8Array | string>;

  constructor(
    source: AsyncIterable<Buffer | Uint8Array | string>,
    private readonly limit: number,
  ) {
    this.it = source[Symbol.asyncIterator]();
  }

  get bytesRead(): number {
    return this.total;
  }

  /** Ensures `n` bytes are buffered; false when the source ended first. */
  private async fill(n: number): Promise<boolean> {
    while (this.buffered < n) {
      if (this.done) return false;
      const r = await this.it.next();
      if (r.done) {
        this.done = true;
        return false;
      }
      const chunk = typeof r.value === 'string' ? Buffer.from(r.value) : Buffer.isBuffer(r.value) ? r.value : Buffer.from(r.value);
      this.total += chunk.length;
      if (this.total > this.limit) throw Errors.payloadTooLarge(`request body exceeds the limit of ${this.limit} bytes`);
      if (chunk.length) {
        this.chunks.push(chunk);
        this.buffered += chunk.length;
      }
    }
    return true;
  }

  /** Exactly `n` bytes, or null at a clean end (nothing buffered). Throws when the source ends mid-way. */
  async take(n: number, what: string): Promise<Buffer | null> {
    if (n === 0) return Buffer.alloc(0);
    if (!(await this.fill(n))) {
      if (this.buffered === 0) return null;
      throw bad(`truncated ${what}`);
    }
    let out: Buffer;
    if (this.chunks[0].length >= n) {
      out = this.chunks[0].subarray(0, n);
      if (this.chunks[0].length === n) this.chunks.shift();
      else this.chunks[0] = this.chunks[0].subarray(n);
    } else {
      out = Buffer.allocUnsafe(n);
      let off = 0;
      while (off < n) {
        const c = this.chunks[0];
        const k = Math.min(c.length, n - off);
        c.copy(out, off, 0, k);
        off += k;
        if (k === c.length) this.chunks.shift();
        else this.chunks[0] = c.subarray(k);
      }
    }
    this.buffered -= n;
    return out;
  }

  /** Exactly `n` bytes as slices of the received chunks (no copy). Throws when the source ends first. */
  async takeParts(n: number, what: string): Promise<Buffer[]> {
    if (n === 0) return [];
    if (!(await this.fill(n))) throw bad(`truncated ${what}`);
    const out: Buffer[] = [];
    let left = n;
    while (left > 0) {
      const c = this.chunks[0];
      if (c.length <= left) {
        out.push(c);
        this.chunks.shift();
        left -= c.length;
      } else {
        out.push(c.subarray(0, left));
        this.chunks[0] = c.subarray(left);
        left = 0;
      }
    }
    this.buffered -= n;
    return out;
  }

  /**
   * Exactly `dest.length` bytes copied into `dest` as they arrive: each received chunk is let go once copied, so none
   * is held until the whole body is there. Throws when the source ends first.
   */
  async takeInto(dest: Buffer, what: string): Promise<void> {
    let off = 0;
    while (off < dest.length) {
      if (this.chunks.length === 0 && !(await this.fill(1))) throw bad(`truncated ${what}`);
      const c = this.chunks[0];
      const k = Math.min(c.length, dest.length - off);
      c.copy(dest, off, 0, k);
      off += k;
      this.buffered -= k;
      if (k === c.length) this.chunks.shift();
      else this.chunks[0] = c.subarray(k);
    }
  }

  /** Stops reading: detaches from the source (which the caller may then drain or discard). */
  async release(): Promise<void> {
    this.chunks = [];
    this.buffered = 0;
    if (!this.done) {
      this.done = true;
      await this.it.return?.();
    }
  }
}

/**
 * Where a message's body is copied as it arrives: a buffer of exactly `bodyLength` bytes, or undefined to keep the
 * body as received (slices of the request's chunks). `framedMetaLength` is the length of the message's framed metadata
 * (IpcMessage.framedMeta), which precedes the body in a file. May wait (e.g. for room to be made).
 */
export type BodyDestination = (kind: IpcMessage['kind'], framedMetaLength: number, bodyLength: number) => Promise<Buffer | undefined>;

/**
 * Reads an uploaded Arrow IPC stream message by message. The first message must be the schema; an end-of-stream
 * marker, or the clean end of the body at a message boundary, ends it. Every message's metadata is verified (bounds
 * and limits, arrow-verify.ts) before it is read, its body length checked before the body is awaited, and a batch's
 * buffers checked against its body; the schema is decoded by the guard's worker before it is decoded here.
 */
export class IpcStreamReader {
  private readonly q: ByteQueue;
  private schemaMsg?: IpcMessage;
  private decodedSchema?: Schema;
  private ended = false;
  private dictionaryMessages = 0;
  private dictionaryBytes = 0;

  constructor(
    source: AsyncIterable<Buffer | Uint8Array | string>,
    limitBytes: number,
    private readonly limits: IpcLimits = UNTRUSTED_LIMITS,
    private readonly guard: SchemaDecodeGuard = schemaGuard,
    /** Awaited before a message body of this many bytes is read (and held): e.g. to reserve memory for it. */
    private readonly beforeBody?: (bytes: number) => Promise<void>,
  ) {
    this.q = new ByteQueue(source, limitBytes);
  }

  get bytesRead(): number {
    return this.q.bytesRead;
  }

  /** The schema message (read on first call). An empty body or one without a schema is a 400. */
  async schema(): Promise<{ message: IpcMessage; schema: Schema }> {
    if (!this.schemaMsg) {
      const m = await this.readRaw();
      if (!m) throw Errors.invalidInput('Request data (Arrow IPC stream) is required');
      if (m.kind !== 'schema') throw bad('the first message is not a schema');
      if (!m.verified.schema?.fields) throw Errors.invalidInput('the Arrow schema has no fields');
      await this.guard.check(m.framedMeta.subarray(8));
      const schema = decodeSchema(m);
      if (!schema || schema.fields.length === 0) throw Errors.invalidInput('the Arrow schema has no fields');
      this.schemaMsg = m;
      this.decodedSchema = schema;
    }
    return { message: this.schemaMsg, schema: this.decodedSchema! };
  }

  /**
   * The next dictionary or record-batch message, or null at the end of the stream. With `into`, the body goes where it
   * says (the message's `body` is then that buffer alone).
   */
  async next(into?: BodyDestination): Promise<IpcMessage | null> {
    await this.schema();
    const m = await this.readRaw(into);
    if (!m) return m;
    const info = this.schemaMsg!.verified.schema!;
    if (m.kind === 'schema') throw bad('a second schema message');
    if (m.kind === 'batch') checkBatch(info, m.verified, m.bufferSizes ?? []);
    if (m.kind === 'dictionary') {
      checkEntries(m.verified, m.bufferSizes ?? []);
      if (!info.dictionaryIds.has(m.verified.dictionaryId!)) throw bad(`a dictionary batch for unknown id ${m.verified.dictionaryId}`);
      this.dictionaryBytes += m.framedMeta.length + m.bodyLength;
      if (++this.dictionaryMessages > MAX_DICTIONARY_MESSAGES) throw bad(`more than ${MAX_DICTIONARY_MESSAGES} dictionary batches`);
      if (this.dictionaryBytes > MAX_DICTIONARY_BYTES) {
        throw Errors.payloadTooLarge(`dictionary batches of more than ${MAX_DICTIONARY_BYTES} bytes in one upload`);
      }
    }
    return m;
  }

  /** Stops reading the body (after an error, or at its end). */
  async release(): Promise<void> {
    await this.q.release();
  }

  private async readRaw(into?: BodyDestination): Promise<IpcMessage | null> {
    if (this.ended) return null;
    const head = await this.q.take(4, 'message header');
    if (!head) {
      this.ended = true;
      return null;
    }
    let metaLen = head.readInt32LE(0);
    if (head.readUInt32LE(0) === CONTINUATION) {
      const len = await this.q.take(4, 'message header');
      if (!len) throw bad('truncated message header');
      metaLen = len.readInt32LE(0);
    }
    if (metaLen === 0) {
      this.ended = true;
      return null;
    }
    // Checked before waiting for (or holding) any of it: the bytes are taken only as they arrive.
    if (metaLen < 0 || metaLen > MAX_METADATA_BYTES) throw bad(`bad message length ${metaLen} (at most ${MAX_METADATA_BYTES})`);
    const meta = await this.q.take(metaLen, 'message metadata');
    if (!meta) throw bad('truncated message metadata');
    const verified = verifyMessage(meta, this.limits);
    const { kind, bodyLength, rows } = verified;
    // Framed with the continuation marker (the legacy framing has none) so every message looks alike; copied now,
    // before more of the body arrives (`meta` may be a slice of a received chunk).
    const framedMeta = Buffer.allocUnsafe(8 + meta.length);
    framedMeta.writeUInt32LE(CONTINUATION, 0);
    framedMeta.writeInt32LE(meta.length, 4);
    meta.copy(framedMeta, 8);
    if (bodyLength > MAX_MESSAGE_BODY_BYTES) {
      throw Errors.payloadTooLarge(`a record batch of ${bodyLength} bytes exceeds the limit of ${MAX_MESSAGE_BODY_BYTES} bytes per batch`);
    }
    if (this.beforeBody && bodyLength > 0) await this.beforeBody(bodyLength);
    const dest = kind === 'schema' ? undefined : await into?.(kind, framedMeta.length, bodyLength);
    if (dest && dest.length !== bodyLength) throw new Error(`a body destination of ${dest.length} bytes for a body of ${bodyLength}`);
    let body: Buffer[];
    if (dest) {
      await this.q.takeInto(dest, 'message body');
      body = [dest];
    } else body = await this.q.takeParts(bodyLength, 'message body');
    const sizes = kind === 'schema' ? undefined : bufferSizes(verified, body);
    return { kind, framedMeta, body, bodyLength, rows, verified, bufferSizes: sizes };
  }
}
