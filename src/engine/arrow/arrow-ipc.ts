import * as fs from 'node:fs';
import { Schema } from 'apache-arrow';
import { schemaGuard } from './arrow-schema-guard';
import { UNTRUSTED_LIMITS } from './arrow-verify';
import { IpcMessage } from './arrow-ipc-message';
import { ipcFile, IpcFileLayout } from './arrow-ipc-file';
import { BodyDestination, IpcStreamReader } from './arrow-ipc-reader';

/**
 * Arrow IPC plumbing for the data plane. Request bodies are Arrow IPC *streams* whose record-batch buffers may be
 * LZ4_FRAME/ZSTD-compressed (the official remote client always compresses); apache-arrow 18 cannot decompress them,
 * the native Lance engine can. So the gateway never decodes batch bodies in JavaScript: it splits the stream into
 * its messages (reading only the flatbuffer metadata, after arrow-verify.ts has checked it), and hands the messages,
 * unchanged, to the engine framed as an IPC *file* (the form the engine's write entry points take).
 * Only the schema message is decoded (it is never compressed), after a worker has decoded it first
 * (arrow-schema-guard.ts). Uploaded bytes are hostile until checked: docs/hostile-input.md lists what is.
 *
 * arrow-ipc-message.ts: one message; arrow-ipc-reader.ts: an upload read message by message; arrow-ipc-file.ts:
 * messages framed as a file; here: a whole body read into memory, spilled to a file, or streamed in chunks.
 */

/**
 * The two buffers a chunked upload lays its chunks out in, in turn: one is being written by the engine while the
 * next chunk is laid out in the other. A fresh buffer per chunk (16 MiB by default) was promoted to V8's old
 * generation while the engine wrote it, so each one waited for a full collection, which the external memory it held
 * triggered about once per chunk (65 full collections in a 1.1 GB upload), and its pages were faulted in afresh
 * every time: the gateway spent 9.7-9.9 s of CPU on an upload the engine writes in 4.2.
 * A buffer may be reused only once the write handed it is done (readChunks awaits it; the engine copies what it
 * is given before that).
 */
class ChunkBuffers {
  private readonly buffers: Buffer[] = [];
  private turn = 0;

  /** The next buffer in turn, at least `size` bytes long (whatever it held before is overwritten). */
  take(size: number): Buffer {
    this.turn ^= 1;
    return this.grow(size, 0);
  }

  /** The buffer last taken, at least `size` bytes long now, with its first `keep` bytes as they were. */
  grow(size: number, keep: number): Buffer {
    const old = this.buffers[this.turn];
    if (old && old.length >= size) return old;
    // Room for more than asked: a chunk ends at the first batch past the chunk size, so it is a little larger.
    const b = Buffer.allocUnsafeSlow(size + (size >> 3));
    if (old && keep > 0) old.copy(b, 0, 0, keep);
    this.buffers[this.turn] = b;
    return b;
  }
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
 * receiving and writing overlap; memory stays at about two chunks. Each batch's body is copied from the request
 * straight into the chunk being laid out, as it arrives: a body held as the request's pieces until its chunk was laid
 * out kept them past several collections, and an upload's peak carried tens of MiB of them
 * (docs/performance.md). A dictionary batch ends the chunk before it (the next chunk starts with every dictionary so
 * far); each chunk is an IPC file: schema, dictionaries, its batches, footer.
 */
async function readChunks(
  reader: IpcStreamReader,
  chunkBytes: number,
  onChunk: (file: Buffer, rows: number, index: number) => Promise<void>,
): Promise<{ schema: Schema; rows: number; chunks: number; bytes: number }> {
  const { message, schema } = await reader.schema();
  const dictionaries: IpcMessage[] = [];
  const buffers = new ChunkBuffers();
  /** Room kept for a chunk's footer: the schema again, a block per message, and the framing. */
  const footerRoom = () => message.framedMeta.length + 256 + 32 * (dictionaries.length + (chunk?.batches ?? 0) + 1);
  let chunk: { buf: Buffer; pos: number; layout: IpcFileLayout; rows: number; batches: number; batchBytes: number } | undefined;
  let rows = 0;
  let chunks = 0;
  let inflight: Promise<void> | undefined;

  /** Starts a chunk (schema and dictionaries) in the next buffer, with room for about `chunkBytes` of batches. */
  const open = () => {
    const layout = new IpcFileLayout(schema);
    const head = layout.start(message);
    for (const d of dictionaries) head.push(...layout.add(d));
    const headBytes = head.reduce((n, p) => n + p.length, 0);
    const buf = buffers.take(headBytes + chunkBytes + footerRoom());
    let pos = 0;
    for (const p of head) pos += p.copy(buf, pos);
    chunk = { buf, pos, layout, rows: 0, batches: 0, batchBytes: 0 };
    return chunk;
  };
  const flush = async () => {
    const c = chunk ?? open();
    chunk = undefined;
    const tail = c.layout.finish();
    const size = c.pos + tail.reduce((n, p) => n + p.length, 0);
    if (size > c.buf.length) c.buf = buffers.grow(size, c.pos);
    let pos = c.pos;
    for (const p of tail) pos += p.copy(c.buf, pos);
    if (inflight) await inflight;
    const index = chunks++;
    inflight = onChunk(c.buf.subarray(0, size), c.rows, index);
    // Handled when awaited; this keeps a failure from being reported as unhandled meanwhile.
    inflight.catch(() => undefined);
  };
  /** A batch's body goes into the open chunk, after its metadata; a dictionary's is kept as received. */
  const into: BodyDestination = async (kind, metaBytes, bodyBytes) => {
    if (kind !== 'batch') {
      // The dictionary comes before the batches that follow it, so the chunk with earlier ones ends here. (An open
      // chunk has a batch: one is opened for a batch's body, and a body that fails to arrive ends the upload.)
      if (chunk) await flush();
      return undefined;
    }
    const c = chunk ?? open();
    const need = c.pos + metaBytes + bodyBytes + footerRoom();
    if (need > c.buf.length) c.buf = buffers.grow(need, c.pos);
    return c.buf.subarray(c.pos + metaBytes, c.pos + metaBytes + bodyBytes);
  };
  try {
    for (let m = await reader.next(into); m; m = await reader.next(into)) {
      if (m.kind === 'dictionary') {
        dictionaries.push(m);
        continue;
      }
      // The body is in place already (`into`); the metadata goes before it, and the block into the footer's list.
      const c = chunk!;
      const [framedMeta] = c.layout.add(m);
      framedMeta.copy(c.buf, c.pos);
      c.pos += framedMeta.length + m.bodyLength;
      c.batchBytes += framedMeta.length + m.bodyLength;
      c.batches++;
      c.rows += m.rows;
      rows += m.rows;
      if (c.batchBytes >= chunkBytes) await flush();
    }
    if (chunk || chunks === 0) await flush();
    await inflight;
  } catch (err) {
    // Never return (and let the caller clean up) while a write is still running.
    await inflight?.catch(() => undefined);
    throw err;
  }
  return { schema, rows, chunks, bytes: reader.bytesRead };
}
