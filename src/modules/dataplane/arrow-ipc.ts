import { Schema } from 'apache-arrow';
import { Message as FbMessage } from 'apache-arrow/fb/message';
import { MessageHeader } from 'apache-arrow/fb/message-header';
import { RecordBatch as FbRecordBatch } from 'apache-arrow/fb/record-batch';
import { Footer, FileBlock } from 'apache-arrow/ipc/metadata/file';
import { Message } from 'apache-arrow/ipc/metadata/message';
import { ByteBuffer } from 'flatbuffers';
import { Errors } from '../../common/errors';

/**
 * Arrow IPC plumbing for the data plane. Request bodies are Arrow IPC *streams* whose record-batch buffers may be
 * LZ4_FRAME/ZSTD-compressed (the official remote client always compresses); apache-arrow 18 cannot decompress them,
 * the native Lance engine can. So the gateway never decodes batch bodies in JavaScript: it splits the stream into
 * its messages (reading only the flatbuffer metadata, via apache-arrow's generated accessors), and hands the
 * messages, unchanged, to the engine framed as an IPC *file* (the form the engine's write entry points take).
 * Only the schema message is decoded here (it is never compressed).
 */

const CONTINUATION = 0xffffffff;
const FILE_MAGIC = Buffer.from('ARROW1\0\0', 'latin1');
const FILE_TRAILER_MAGIC = Buffer.from('ARROW1', 'latin1');
const EOS = Buffer.from([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);
/** A message header larger than this is not a real Arrow message (the schema of 10 000 columns is < 2 MiB). */
const MAX_METADATA_BYTES = 64 << 20;
/** One record batch is held whole while it is read: a larger one is refused (413), whatever the body limit. */
export const MAX_MESSAGE_BODY_BYTES = 1024 ** 3;

export interface IpcMessage {
  kind: 'schema' | 'dictionary' | 'batch';
  /** The message framed as in a stream: continuation marker, metadata length, metadata (padded). */
  framedMeta: Buffer;
  /** The body as received: slices of the request's chunks, copied only once, into the file handed to the engine. */
  body: Buffer[];
  bodyLength: number;
  /** Rows of a record batch. */
  rows: number;
}

/** Raised on anything that is not a well-formed Arrow IPC stream. */
const bad = (msg: string) => Errors.invalidInput(`invalid Arrow IPC stream: ${msg}`);

/** Kind, body length and row count of a message, from its flatbuffer metadata only. */
function parseMeta(meta: Buffer): { kind: IpcMessage['kind']; bodyLength: number; rows: number } {
  let headerType: number;
  let bodyLength: number;
  let rows = 0;
  try {
    const fb = FbMessage.getRootAsMessage(new ByteBuffer(meta));
    headerType = fb.headerType();
    bodyLength = Number(fb.bodyLength());
    if (headerType === MessageHeader.RecordBatch) {
      const rb = fb.header(new FbRecordBatch()) as FbRecordBatch | null;
      rows = rb ? Number(rb.length()) : 0;
    }
  } catch (err) {
    throw bad(`unreadable message metadata (${(err as Error).message})`);
  }
  if (!Number.isSafeInteger(bodyLength) || bodyLength < 0) throw bad(`bad body length ${bodyLength}`);
  if (!Number.isSafeInteger(rows) || rows < 0) throw bad(`bad row count ${rows}`);
  const kind =
    headerType === MessageHeader.Schema
      ? 'schema'
      : headerType === MessageHeader.RecordBatch
        ? 'batch'
        : headerType === MessageHeader.DictionaryBatch
          ? 'dictionary'
          : undefined;
  if (!kind) throw bad(`unsupported message type ${headerType}`);
  return { kind, bodyLength, rows };
}

/**
 * The messages of a complete, in-memory Arrow IPC stream or file (e.g. one batch as the engine hands it out): a
 * file's messages follow its 8-byte magic and end at the end-of-stream marker before its footer.
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
    const { kind, bodyLength, rows } = parseMeta(buf.subarray(pos + 8, pos + 8 + metaLen));
    const bodyStart = pos + 8 + metaLen;
    if (bodyStart + bodyLength > buf.length) throw bad('truncated message body');
    out.push({ kind, framedMeta, body: [buf.subarray(bodyStart, bodyStart + bodyLength)], bodyLength, rows });
    pos = bodyStart + bodyLength;
  }
  return out;
}

/** Decodes a schema message (never compressed) with apache-arrow. */
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
 * Reads an Arrow IPC stream message by message. The first message must be the schema; an end-of-stream marker, or
 * the clean end of the body at a message boundary, ends it.
 */
export class IpcStreamReader {
  private readonly q: ByteQueue;
  private schemaMsg?: IpcMessage;
  private decodedSchema?: Schema;
  private ended = false;

  constructor(source: AsyncIterable<Buffer | Uint8Array | string>, limitBytes: number) {
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
    if (m && m.kind === 'schema') throw bad('a second schema message');
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
    if (metaLen < 0 || metaLen > MAX_METADATA_BYTES) throw bad(`bad message length ${metaLen}`);
    const meta = await this.q.take(metaLen, 'message metadata');
    if (!meta) throw bad('truncated message metadata');
    const { kind, bodyLength, rows } = parseMeta(meta);
    if (bodyLength > MAX_MESSAGE_BODY_BYTES) {
      throw Errors.payloadTooLarge(`a record batch of ${bodyLength} bytes exceeds the limit of ${MAX_MESSAGE_BODY_BYTES} bytes per batch`);
    }
    const body = await this.q.takeParts(bodyLength, 'message body');
    // Re-frame with the continuation marker (the legacy framing has none) so every message looks alike.
    const framedMeta =
      prefix.length === 8 ? Buffer.concat([prefix, meta]) : Buffer.concat([Buffer.from([0xff, 0xff, 0xff, 0xff]), prefix, meta]);
    return { kind, framedMeta, body, bodyLength, rows };
  }
}

/**
 * Frames a schema, the dictionaries and some record batches as an Arrow IPC file. Bodies are copied once into the
 * result, nothing is decoded. Block offsets stay 8-byte aligned because every message of a valid stream is padded.
 */
export function ipcFile(schema: Schema, schemaMsg: IpcMessage, dictionaries: IpcMessage[], batches: IpcMessage[]): Buffer {
  const layout = new IpcFileLayout(schema);
  const parts = layout.start(schemaMsg);
  for (const m of dictionaries) parts.push(...layout.add(m));
  for (const m of batches) parts.push(...layout.add(m));
  parts.push(...layout.finish());
  return Buffer.concat(parts);
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
  const flush = async () => {
    const file = ipcFile(schema, message, dictionaries, pending);
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
