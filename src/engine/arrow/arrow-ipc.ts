import * as fs from 'node:fs';
import { Schema } from 'apache-arrow';
import { MessageHeader } from 'apache-arrow/fb/message-header';
import { Footer, FileBlock } from 'apache-arrow/ipc/metadata/file';
import { Message } from 'apache-arrow/ipc/metadata/message';
import { Errors } from '../../platform/http/errors';
import { SchemaDecodeGuard, schemaGuard } from './arrow-schema-guard';
import { checkBatch, checkEntries, IpcLimits, TRUSTED_LIMITS, UNTRUSTED_LIMITS, verifyMessage, VerifiedMessage } from './arrow-verify';

/**
 * Arrow IPC plumbing for the data plane. Request bodies are Arrow IPC *streams* whose record-batch buffers may be
 * LZ4_FRAME/ZSTD-compressed (the official remote client always compresses); apache-arrow 18 cannot decompress them,
 * the native Lance engine can. So the gateway never decodes batch bodies in JavaScript: it splits the stream into
 * its messages (reading only the flatbuffer metadata, after arrow-verify.ts has checked it), and hands the messages,
 * unchanged, to the engine framed as an IPC *file* (the form the engine's write entry points take).
 * Only the schema message is decoded here (it is never compressed), after a worker has decoded it first
 * (arrow-schema-guard.ts). Uploaded bytes are hostile until checked: README "Hostile input" lists what is.
 */

const CONTINUATION = 0xffffffff;
const FILE_MAGIC = Buffer.from('ARROW1\0\0', 'latin1');
const FILE_TRAILER_MAGIC = Buffer.from('ARROW1', 'latin1');
const EOS = Buffer.from([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);
/** A message header larger than this is not a real Arrow message (the schema of 10 000 columns is < 2 MiB). */
export const MAX_METADATA_BYTES = 16 << 20;
/** One record batch is held whole while it is read: a larger one is refused (413), whatever the body limit. */
export const MAX_MESSAGE_BODY_BYTES = 1024 ** 3;
/**
 * What the engine may be asked to decompress for one batch: the sum of the sizes its compressed buffers declare. The
 * engine allocates a declared size before decompressing, and a failed allocation aborts the process (no error to
 * catch): a 200-byte buffer declaring 1 TiB did exactly that. Above this → 413.
 */
export const MAX_DECOMPRESSED_BATCH_BYTES = 1024 ** 3;
/** Dictionary batches are kept for the whole upload (every chunk handed to the engine repeats them). */
export const MAX_DICTIONARY_MESSAGES = 10_000;
export const MAX_DICTIONARY_BYTES = 256 << 20;

export interface IpcMessage {
  kind: 'schema' | 'dictionary' | 'batch';
  /** The message framed as in a stream: continuation marker, metadata length, metadata (padded). */
  framedMeta: Buffer;
  /** The body as received: slices of the request's chunks, copied only once, into the file handed to the engine. */
  body: Buffer[];
  bodyLength: number;
  /** Rows of a record batch. */
  rows: number;
  /** What the verifier found in the metadata. */
  verified: VerifiedMessage;
  /** Batches: each buffer's size once decompressed. */
  bufferSizes?: number[];
}

/** Raised on anything that is not a well-formed Arrow IPC stream. */
const bad = (msg: string) => Errors.invalidInput(`invalid Arrow IPC stream: ${msg}`);

/** Reads little-endian int64s at body offsets across the body's chunks (binary search over their starts). */
class BodyView {
  private readonly starts: number[] = [];

  constructor(private readonly parts: Buffer[]) {
    let at = 0;
    for (const p of parts) {
      this.starts.push(at);
      at += p.length;
    }
  }

  int64(offset: number): bigint {
    let lo = 0;
    let hi = this.parts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.starts[mid] <= offset) lo = mid;
      else hi = mid - 1;
    }
    const first = this.parts[lo];
    const at = offset - this.starts[lo];
    if (at + 8 <= first.length) return first.readBigInt64LE(at);
    const b = Buffer.alloc(8);
    let copied = 0;
    for (let i = lo, from = at; copied < 8 && i < this.parts.length; i++, from = 0) {
      copied += this.parts[i].copy(b, copied, from, Math.min(this.parts[i].length, from + 8 - copied));
    }
    return b.readBigInt64LE(0);
  }
}

/**
 * The size of each buffer of a batch once decompressed. A compressed batch's buffers each start with the size they
 * decompress to (-1: stored uncompressed); the engine trusts it (see MAX_DECOMPRESSED_BATCH_BYTES), so it is checked
 * here.
 */
function bufferSizes(v: VerifiedMessage, body: Buffer[]): number[] {
  const buffers = v.buffers ?? [];
  if (!v.compressed) return buffers.map((b) => b.length);
  const view = new BodyView(body);
  const sizes: number[] = [];
  let total = 0;
  for (const b of buffers) {
    let size = 0;
    if (b.length > 0) {
      if (b.length < 8) throw bad(`a compressed buffer of ${b.length} bytes (its size prefix alone is 8)`);
      const declared = view.int64(b.offset);
      if (declared === -1n) size = b.length - 8;
      else if (declared < 0n) throw bad(`a compressed buffer declaring ${declared} bytes`);
      else size = declared > BigInt(MAX_DECOMPRESSED_BATCH_BYTES) ? Infinity : Number(declared);
    }
    total += size;
    if (total > MAX_DECOMPRESSED_BATCH_BYTES) {
      throw Errors.payloadTooLarge(`a record batch decompressing to more than ${MAX_DECOMPRESSED_BATCH_BYTES} bytes exceeds the limit per batch`);
    }
    sizes.push(size);
  }
  return sizes;
}

/**
 * The messages of a complete, in-memory Arrow IPC stream or file that the engine produced (e.g. one batch of a query
 * answer): a file's messages follow its 8-byte magic and end at the end-of-stream marker before its footer. Verified
 * for structure, not capped (a table may legitimately have more columns than an upload may declare).
 */
export function splitStream(buf: Buffer): IpcMessage[] {
  const out: IpcMessage[] = [];
  let pos = 0;
  if (buf.length >= 8 && buf.subarray(0, 6).equals(FILE_TRAILER_MAGIC)) {
    // A file: the magic, then padding up to the writer's alignment (arrow-rs aligns to 64 bytes).
    pos = 8;
    while (pos + 8 <= buf.length && buf.readUInt32LE(pos) === 0) pos += 8;
  }
  while (pos + 8 <= buf.length) {
    if (buf.readUInt32LE(pos) !== CONTINUATION) throw bad('missing continuation marker');
    const metaLen = buf.readInt32LE(pos + 4);
    if (metaLen === 0) break;
    if (metaLen < 0 || pos + 8 + metaLen > buf.length) throw bad('truncated message');
    const framedMeta = buf.subarray(pos, pos + 8 + metaLen);
    const verified = verifyMessage(buf.subarray(pos + 8, pos + 8 + metaLen), TRUSTED_LIMITS);
    const { kind, bodyLength, rows } = verified;
    const bodyStart = pos + 8 + metaLen;
    if (bodyStart + bodyLength > buf.length) throw bad('truncated message body');
    out.push({ kind, framedMeta, body: [buf.subarray(bodyStart, bodyStart + bodyLength)], bodyLength, rows, verified });
    pos = bodyStart + bodyLength;
  }
  return out;
}

/** Decodes a schema message (never compressed, its metadata already verified) with apache-arrow. */
export function decodeSchema(m: IpcMessage): Schema {
  try {
    return (Message.decode(m.framedMeta.subarray(8)) as Message<MessageHeader.Schema>).header() as Schema;
  } catch (err) {
    throw bad(`unreadable schema (${(err as Error).message})`);
  }
}

/**
 * Lays out an Arrow IPC file message by message (magic, schema, dictionaries and batches, footer), tracking the
 * block offsets the footer lists, so a file can be produced incrementally.
 */
export class IpcFileLayout {
  private offset = 0;
  private readonly dictBlocks: FileBlock[] = [];
  private readonly batchBlocks: FileBlock[] = [];

  constructor(private readonly schema: Schema) {}

  start(schemaMsg: IpcMessage): Buffer[] {
    this.offset = FILE_MAGIC.length + schemaMsg.framedMeta.length + schemaMsg.bodyLength;
    return [FILE_MAGIC, schemaMsg.framedMeta, ...schemaMsg.body];
  }

  add(m: IpcMessage): Buffer[] {
    if (m.kind === 'schema') return [];
    if (this.offset % 8 !== 0) throw bad('message not aligned to 8 bytes');
    (m.kind === 'dictionary' ? this.dictBlocks : this.batchBlocks).push(new FileBlock(m.framedMeta.length, m.bodyLength, this.offset));
    this.offset += m.framedMeta.length + m.bodyLength;
    return [m.framedMeta, ...m.body];
  }

  finish(): Buffer[] {
    const footer = Buffer.from(Footer.encode(new Footer(this.schema, 4 /* MetadataVersion.V5 */, this.batchBlocks, this.dictBlocks)));
    const footerLen = Buffer.alloc(4);
    footerLen.writeInt32LE(footer.length, 0);
    return [EOS, footer, footerLen, FILE_TRAILER_MAGIC];
  }
}

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

  /** The next dictionary or record-batch message, or null at the end of the stream. */
  async next(): Promise<IpcMessage | null> {
    await this.schema();
    const m = await this.readRaw();
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

  private async readRaw(): Promise<IpcMessage | null> {
    if (this.ended) return null;
    const head = await this.q.take(4, 'message header');
    if (!head) {
      this.ended = true;
      return null;
    }
    let metaLen = head.readInt32LE(0);
    let prefix = head;
    if (head.readUInt32LE(0) === CONTINUATION) {
      const len = await this.q.take(4, 'message header');
      if (!len) throw bad('truncated message header');
      metaLen = len.readInt32LE(0);
      prefix = Buffer.concat([head, len]);
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
    if (bodyLength > MAX_MESSAGE_BODY_BYTES) {
      throw Errors.payloadTooLarge(`a record batch of ${bodyLength} bytes exceeds the limit of ${MAX_MESSAGE_BODY_BYTES} bytes per batch`);
    }
    if (this.beforeBody && bodyLength > 0) await this.beforeBody(bodyLength);
    const body = await this.q.takeParts(bodyLength, 'message body');
    const sizes = kind === 'schema' ? undefined : bufferSizes(verified, body);
    // Re-frame with the continuation marker (the legacy framing has none) so every message looks alike.
    const framedMeta =
      prefix.length === 8 ? Buffer.concat([prefix, meta]) : Buffer.concat([Buffer.from([0xff, 0xff, 0xff, 0xff]), prefix, meta]);
    return { kind, framedMeta, body, bodyLength, rows, verified, bufferSizes: sizes };
  }
}

/**
 * Frames a schema, the dictionaries and some record batches as an Arrow IPC file. Bodies are copied once into the
 * result, nothing is decoded. Block offsets stay 8-byte aligned because every message of a valid stream is padded.
 */
export function ipcFile(
  schema: Schema,
  schemaMsg: IpcMessage,
  dictionaries: IpcMessage[],
  batches: IpcMessage[],
  alloc: (size: number) => Buffer = Buffer.allocUnsafe,
): Buffer {
  const layout = new IpcFileLayout(schema);
  const parts = layout.start(schemaMsg);
  for (const m of dictionaries) parts.push(...layout.add(m));
  for (const m of batches) parts.push(...layout.add(m));
  parts.push(...layout.finish());
  const out = alloc(parts.reduce((n, p) => n + p.length, 0));
  let off = 0;
  for (const p of parts) off += p.copy(out, off);
  return out;
}

/**
 * The two buffers a chunked upload lays its chunks out in, in turn: one is being written by the engine while the
 * next chunk is laid out in the other. A fresh buffer per chunk (16 MiB by default) was promoted to V8's old
 * generation while the engine wrote it, so each one waited for a full collection, which the external memory it held
 * triggered about once per chunk (65 full collections in a 1.1 GB upload), and its pages were faulted in afresh
 * every time: the gateway spent 9.7-9.9 s of CPU on an upload the engine writes in 4.2 (2026-11-26).
 * A buffer may be reused only once the write handed it is done (readChunks awaits it; the engine copies what it
 * is given before that).
 */
class ChunkBuffers {
  private readonly buffers: Buffer[] = [];
  private turn = 0;

  take = (size: number): Buffer => {
    let b = this.buffers[this.turn];
    if (!b || b.length < size) {
      // Room for chunks a little larger than this one (a chunk ends at the first batch past the chunk size).
      b = Buffer.allocUnsafeSlow(size + (size >> 3));
      this.buffers[this.turn] = b;
    }
    this.turn ^= 1;
    return b.subarray(0, size);
  };
}

/** A whole (bounded) Arrow stream read into memory: for operations that must commit once. */
export interface BufferedIpc {
  schema: Schema;
  file: Buffer;
  rows: number;
  batches: number;
}

export async function readWholeStream(source: AsyncIterable<Buffer | Uint8Array | string>, limitBytes: number): Promise<BufferedIpc> {
  const reader = new IpcStreamReader(source, limitBytes);
  try {
    const { message, schema } = await reader.schema();
    const dictionaries: IpcMessage[] = [];
    const batches: IpcMessage[] = [];
    let rows = 0;
    for (let m = await reader.next(); m; m = await reader.next()) {
      if (m.kind === 'dictionary') dictionaries.push(m);
      else {
        batches.push(m);
        rows += m.rows;
      }
    }
    return { schema, file: ipcFile(schema, message, dictionaries, batches), rows, batches: batches.length };
  } finally {
    await reader.release();
  }
}

/** Writes all of `parts` at the file handle's position (a vectored write may be partial). */
async function writeAll(fh: fs.promises.FileHandle, parts: Buffer[]): Promise<number> {
  let left = parts.filter((p) => p.length > 0);
  let written = 0;
  while (left.length > 0) {
    // At most 1024 buffers per call (IOV_MAX on Linux).
    const { bytesWritten } = await fh.writev(left.slice(0, 1024));
    written += bytesWritten;
    let n = bytesWritten;
    const rest: Buffer[] = [];
    for (const p of left) {
      if (n >= p.length) n -= p.length;
      else {
        rest.push(n > 0 ? p.subarray(n) : p);
        n = 0;
      }
    }
    left = rest;
  }
  return written;
}

/** What spillWholeStream wrote: the body as an Arrow IPC file of `bytes` bytes at the path it was given. */
export interface SpilledIpc {
  schema: Schema;
  rows: number;
  batches: number;
  bytes: number;
}

/** Memory for one message body at a time while a body is spilled: `hold` before it is read, `free` once written. */
export interface SpillMemory {
  hold(bytes: number): Promise<void>;
  free(): void;
}

/**
 * A whole (bounded) Arrow stream written to `file` (created, must not exist) as an Arrow IPC file while it arrives,
 * verified message by message like readWholeStream: only the message being read is held in memory (between
 * `memory.hold` and `memory.free`). The caller removes the file, whatever happens.
 */
export async function spillWholeStream(
  source: AsyncIterable<Buffer | Uint8Array | string>,
  limitBytes: number,
  file: string,
  memory?: SpillMemory,
): Promise<SpilledIpc> {
  const reader = new IpcStreamReader(source, limitBytes, UNTRUSTED_LIMITS, schemaGuard, memory && ((n) => memory.hold(n)));
  let fh: fs.promises.FileHandle | undefined;
  try {
    const { message, schema } = await reader.schema();
    fh = await fs.promises.open(file, 'wx', 0o600);
    const layout = new IpcFileLayout(schema);
    let bytes = await writeAll(fh, layout.start(message));
    let rows = 0;
    let batches = 0;
    for (let m = await reader.next(); m; m = await reader.next()) {
      if (m.kind === 'batch') {
        rows += m.rows;
        batches++;
      }
      bytes += await writeAll(fh, layout.add(m));
      memory?.free();
    }
    bytes += await writeAll(fh, layout.finish());
    return { schema, rows, batches, bytes };
  } finally {
    memory?.free();
    await fh?.close().catch(() => undefined);
    await reader.release();
  }
}

/**
 * Streams an Arrow body in chunks of about `chunkBytes`: each chunk is a self-contained IPC file (schema,
 * dictionaries seen so far, its batches). `onChunk` is awaited before more of the body is read (back-pressure).
 */
export async function streamInChunks(
  source: AsyncIterable<Buffer | Uint8Array | string>,
  limitBytes: number,
  chunkBytes: number,
  onChunk: (file: Buffer, rows: number, index: number) => Promise<void>,
): Promise<{ schema: Schema; rows: number; chunks: number; bytes: number }> {
  const reader = new IpcStreamReader(source, limitBytes);
  try {
    return await readChunks(reader, chunkBytes, onChunk);
  } finally {
    await reader.release();
  }
}

/**
 * Reads the next chunk while the previous one is being written (at most one write in flight, writes in order), so
 * receiving and writing overlap; memory stays at about two chunks.
 */
async function readChunks(
  reader: IpcStreamReader,
  chunkBytes: number,
  onChunk: (file: Buffer, rows: number, index: number) => Promise<void>,
): Promise<{ schema: Schema; rows: number; chunks: number; bytes: number }> {
  const { message, schema } = await reader.schema();
  const dictionaries: IpcMessage[] = [];
  let pending: IpcMessage[] = [];
  let pendingBytes = 0;
  let pendingRows = 0;
  let rows = 0;
  let chunks = 0;
  let inflight: Promise<void> | undefined;
  const buffers = new ChunkBuffers();
  const flush = async () => {
    // Laid out while the previous chunk is being written, in the other buffer.
    const file = ipcFile(schema, message, dictionaries, pending, buffers.take);
    const n = pendingRows;
    pending = [];
    pendingBytes = 0;
    pendingRows = 0;
    if (inflight) await inflight;
    const index = chunks++;
    inflight = onChunk(file, n, index);
    // Handled when awaited; this keeps a failure from being reported as unhandled meanwhile.
    inflight.catch(() => undefined);
  };
  try {
    for (let m = await reader.next(); m; m = await reader.next()) {
      if (m.kind === 'dictionary') {
        dictionaries.push(m);
        continue;
      }
      pending.push(m);
      pendingBytes += m.framedMeta.length + m.bodyLength;
      pendingRows += m.rows;
      rows += m.rows;
      if (pendingBytes >= chunkBytes) await flush();
    }
    if (pending.length > 0 || chunks === 0) await flush();
    await inflight;
  } catch (err) {
    // Never return (and let the caller clean up) while a write is still running.
    await inflight?.catch(() => undefined);
    throw err;
  }
  return { schema, rows, chunks, bytes: reader.bytesRead };
}
