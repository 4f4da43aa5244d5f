import { Schema } from 'apache-arrow';
import { MessageHeader } from 'apache-arrow/fb/message-header';
import { Message } from 'apache-arrow/ipc/metadata/message';
import { Errors } from '../../platform/http/errors';
import { TRUSTED_LIMITS, verifyMessage, VerifiedMessage } from './arrow-verify';

/**
 * One Arrow IPC message as the gateway handles it: its framed metadata and its body, never decoded (see arrow-ipc.ts),
 * and what is read from it: the framing constants, the decompressed sizes a batch declares, the messages of an
 * in-memory stream the engine produced, and the schema message decoded.
 */

export const CONTINUATION = 0xffffffff;
export const FILE_MAGIC = Buffer.from('ARROW1\0\0', 'latin1');
export const FILE_TRAILER_MAGIC = Buffer.from('ARROW1', 'latin1');
export const EOS = Buffer.from([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);
/**
 * What the engine may be asked to decompress for one batch: the sum of the sizes its compressed buffers declare. The
 * engine allocates a declared size before decompressing, and a failed allocation aborts the process (no error to
 * catch): a 200-byte buffer declaring 1 TiB did exactly that. Above this → 413.
 */
export const MAX_DECOMPRESSED_BATCH_BYTES = 1024 ** 3;

export interface IpcMessage {
  kind: 'schema' | 'dictionary' | 'batch';
  /** The message framed as in a stream: continuation marker, metadata length, metadata (padded). */
  framedMeta: Buffer;
  /**
   * The body: slices of the request's chunks as received, or the one buffer it was copied into as it arrived
   * (IpcStreamReader.next's `into`). Either way copied only once on its way to the engine.
   */
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
export const bad = (msg: string) => Errors.invalidInput(`invalid Arrow IPC stream: ${msg}`);

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
export function bufferSizes(v: VerifiedMessage, body: Buffer[]): number[] {
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
      throw Errors.payloadTooLarge(
        `a record batch decompressing to more than ${MAX_DECOMPRESSED_BATCH_BYTES} bytes exceeds the limit per batch`,
      );
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
