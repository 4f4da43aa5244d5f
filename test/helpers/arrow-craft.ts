import * as fs from 'node:fs';
import * as path from 'node:path';
import * as arrow from 'apache-arrow';
import { Builder } from 'flatbuffers';
import { BodyCompression } from 'apache-arrow/fb/body-compression';
import { Buffer as FbBuffer } from 'apache-arrow/fb/buffer';
import { Field as FbField } from 'apache-arrow/fb/field';
import { FieldNode } from 'apache-arrow/fb/field-node';
import { Int as FbInt } from 'apache-arrow/fb/int';
import { Message as FbMessage } from 'apache-arrow/fb/message';
import { RecordBatch as FbRecordBatch } from 'apache-arrow/fb/record-batch';
import { Schema as FbSchema } from 'apache-arrow/fb/schema';
import { Struct_ as FbStruct } from 'apache-arrow/fb/struct-';
import { Message } from 'apache-arrow/ipc/metadata/message';
import { ROOT } from './root';

/**
 * Arrow IPC streams for the hostile-input tests: valid ones, the crash fixture of issue 9, and hand-made messages
 * that no well-behaved writer produces (built with apache-arrow's generated flatbuffer classes).
 */

export const ARROW_STREAM = 'application/vnd.apache.arrow.stream';
const MESSAGE_HEADER = { Schema: 1, RecordBatch: 3 };
const V5 = 4;
const TYPE = { Int: 2, Struct: 13 };

/** test/fixtures/arrow/schema-oom.arrow (made by scripts/arrow-crash-fixture.js; see test/fixtures/README.md). */
export function crashFixture(): Buffer {
  return fs.readFileSync(path.join(ROOT, 'test/fixtures/arrow/schema-oom.arrow'));
}

/** The table the crash fixture was made from: one row of id Int32, name Utf8, writer Int32, vector 4 × Float32. */
export function oneRowTable(name = 'alice'): arrow.Table {
  return new arrow.Table({
    id: arrow.vectorFromArray(Int32Array.from([1])),
    name: arrow.vectorFromArray([name], new arrow.Utf8()),
    writer: arrow.vectorFromArray(Int32Array.from([7])),
    vector: arrow.vectorFromArray([[0.1, 0.2, 0.3, 0.4]], new arrow.FixedSizeList(4, new arrow.Field('item', new arrow.Float32(), true))),
  });
}

export function streamOf(table: arrow.Table): Buffer {
  return Buffer.from(arrow.tableToIPC(table, 'stream'));
}

export const EOS = Buffer.from([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);
const pad8 = (n: number) => (n + 7) & ~7;

/** A message as a stream carries it: continuation marker, length, metadata padded to 8 bytes, body. */
export function frame(meta: Uint8Array, body: Buffer = Buffer.alloc(0)): Buffer {
  const m = Buffer.alloc(pad8(meta.length));
  Buffer.from(meta).copy(m);
  const head = Buffer.alloc(8);
  head.writeUInt32LE(0xffffffff, 0);
  head.writeInt32LE(m.length, 4);
  return Buffer.concat([head, m, body]);
}

export interface RawMessage {
  /** Where the message starts in the stream. */
  at: number;
  meta: Buffer;
  body: Buffer;
}

/** The messages of a well-formed stream. */
export function messagesOf(stream: Buffer): RawMessage[] {
  const out: RawMessage[] = [];
  for (let at = 0; at + 8 <= stream.length;) {
    const len = stream.readInt32LE(at + 4);
    if (len === 0) break;
    const meta = stream.subarray(at + 8, at + 8 + len);
    const bodyLength = Number(Message.decode(meta).bodyLength);
    out.push({ at, meta, body: stream.subarray(at + 8 + len, at + 8 + len + bodyLength) });
    at += 8 + len + bodyLength;
  }
  return out;
}

/** A stream of just a schema (apache-arrow's own encoding of it). */
export function schemaStream(schema: arrow.Schema): Buffer {
  return Buffer.concat([frame(schemaMessage(schema)), EOS]);
}

export function schemaMessage(schema: arrow.Schema): Uint8Array {
  return Message.encode(Message.from(schema));
}

export function wideSchema(columns: number): arrow.Schema {
  return new arrow.Schema(Array.from({ length: columns }, (_, i) => new arrow.Field(`c${i}`, new arrow.Int32(), true)));
}

/** A column nested `depth` levels deep (structs of structs … of an Int32): `depth` fields counting the column. */
export function deepSchema(depth: number): arrow.Schema {
  let f: arrow.Field = new arrow.Field('leaf', new arrow.Int32(), true);
  for (let d = 1; d < depth; d++) f = new arrow.Field(`s${d}`, new arrow.Struct([f]), true);
  return new arrow.Schema([f]);
}

/**
 * A schema message of a few hundred bytes whose column has 2^depth leaf fields: each level's children vector names
 * the same child table twice (a flatbuffer may point at one table from many places).
 */
export function sharedChildrenSchemaMessage(depth: number): Uint8Array {
  const b = new Builder(256);
  const name = b.createString('x');
  const int = FbInt.createInt(b, 32, true);
  FbField.startField(b);
  FbField.addName(b, name);
  FbField.addNullable(b, true);
  FbField.addTypeType(b, TYPE.Int);
  FbField.addType(b, int);
  let f = FbField.endField(b);
  for (let d = 0; d < depth; d++) {
    const children = FbField.createChildrenVector(b, [f, f]);
    FbStruct.startStruct_(b);
    const st = FbStruct.endStruct_(b);
    FbField.startField(b);
    FbField.addName(b, name);
    FbField.addNullable(b, true);
    FbField.addTypeType(b, TYPE.Struct);
    FbField.addType(b, st);
    FbField.addChildren(b, children);
    f = FbField.endField(b);
  }
  const fields = FbSchema.createFieldsVector(b, [f]);
  FbSchema.startSchema(b);
  FbSchema.addFields(b, fields);
  const schema = FbSchema.endSchema(b);
  FbMessage.startMessage(b);
  FbMessage.addVersion(b, V5);
  FbMessage.addHeaderType(b, MESSAGE_HEADER.Schema);
  FbMessage.addHeader(b, schema);
  FbMessage.addBodyLength(b, BigInt(0));
  b.finish(FbMessage.endMessage(b));
  return b.asUint8Array();
}

/** A schema message of one column `v` of type `typeId` (Schema.fbs numbering) with an empty type table. */
export function oneColumnSchemaMessage(typeId: number): Uint8Array {
  const b = new Builder(128);
  const name = b.createString('v');
  FbStruct.startStruct_(b);
  const type = FbStruct.endStruct_(b);
  FbField.startField(b);
  FbField.addName(b, name);
  FbField.addNullable(b, true);
  FbField.addTypeType(b, typeId);
  FbField.addType(b, type);
  const f = FbField.endField(b);
  const fields = FbSchema.createFieldsVector(b, [f]);
  FbSchema.startSchema(b);
  FbSchema.addFields(b, fields);
  const schema = FbSchema.endSchema(b);
  FbMessage.startMessage(b);
  FbMessage.addVersion(b, V5);
  FbMessage.addHeaderType(b, MESSAGE_HEADER.Schema);
  FbMessage.addHeader(b, schema);
  FbMessage.addBodyLength(b, BigInt(0));
  b.finish(FbMessage.endMessage(b));
  return b.asUint8Array();
}

export interface BatchSpec {
  rows: number | bigint;
  /** [length, null count] per field node. */
  nodes: Array<[number | bigint, number | bigint]>;
  /** [offset, length] per buffer. */
  buffers: Array<[number | bigint, number | bigint]>;
  bodyLength: number | bigint;
  /** 0 = LZ4_FRAME, 1 = ZSTD. */
  codec?: number;
}

/** A record-batch message's metadata, exactly as specified (nothing checked). */
export function recordBatchMessage(spec: BatchSpec): Uint8Array {
  const b = new Builder(256);
  FbRecordBatch.startNodesVector(b, spec.nodes.length);
  for (const [len, nulls] of [...spec.nodes].reverse()) FieldNode.createFieldNode(b, BigInt(len), BigInt(nulls));
  const nodes = b.endVector();
  FbRecordBatch.startBuffersVector(b, spec.buffers.length);
  for (const [off, len] of [...spec.buffers].reverse()) FbBuffer.createBuffer(b, BigInt(off), BigInt(len));
  const buffers = b.endVector();
  let compression = 0;
  if (spec.codec !== undefined) {
    BodyCompression.startBodyCompression(b);
    BodyCompression.addCodec(b, spec.codec);
    BodyCompression.addMethod(b, 0);
    compression = BodyCompression.endBodyCompression(b);
  }
  FbRecordBatch.startRecordBatch(b);
  FbRecordBatch.addLength(b, BigInt(spec.rows));
  FbRecordBatch.addNodes(b, nodes);
  FbRecordBatch.addBuffers(b, buffers);
  if (compression) FbRecordBatch.addCompression(b, compression);
  const header = FbRecordBatch.endRecordBatch(b);
  FbMessage.startMessage(b);
  FbMessage.addVersion(b, V5);
  FbMessage.addHeaderType(b, MESSAGE_HEADER.RecordBatch);
  FbMessage.addHeader(b, header);
  FbMessage.addBodyLength(b, BigInt(spec.bodyLength));
  b.finish(FbMessage.endMessage(b));
  return b.asUint8Array();
}

/** One batch of a Null-typed column of `rows` rows: no buffers at all, whatever the row count. */
export function nullColumnStream(rows: number): Buffer {
  const schema = new arrow.Schema([new arrow.Field('nothing', new arrow.Null(), true)]);
  const batch = recordBatchMessage({ rows, nodes: [[rows, rows]], buffers: [], bodyLength: 0 });
  return Buffer.concat([frame(schemaMessage(schema)), frame(batch), EOS]);
}

/**
 * `table` as a stream whose batches use IPC body compression (codec LZ4_FRAME), every buffer stored uncompressed
 * behind its size prefix of -1, as the format allows: what the engine reads like the official client's uploads.
 * `declare` replaces one buffer's prefix with a decompressed size (the buffer itself stays as it is).
 */
export function compressedStream(table: arrow.Table, declare?: { buffer: number; size: bigint }): Buffer {
  const [schema, ...batches] = messagesOf(streamOf(table));
  const parts = [frame(schema.meta)];
  for (const m of batches) {
    const rb = Message.decode(m.meta).header() as unknown as {
      length: number;
      nodes: Array<{ length: number; nullCount: number }>;
      buffers: Array<{ offset: number; length: number }>;
    };
    const bodies: Buffer[] = [];
    const regions: Array<[number, number]> = [];
    let at = 0;
    rb.buffers.forEach((r, i) => {
      if (r.length === 0) {
        regions.push([at, 0]);
        return;
      }
      const prefix = Buffer.alloc(8);
      prefix.writeBigInt64LE(declare && declare.buffer === i ? declare.size : BigInt(-1));
      const stored = Buffer.concat([prefix, m.body.subarray(r.offset, r.offset + r.length)]);
      const padded = Buffer.alloc(pad8(stored.length));
      stored.copy(padded);
      regions.push([at, stored.length]);
      bodies.push(padded);
      at += padded.length;
    });
    const body = Buffer.concat(bodies);
    const meta = recordBatchMessage({
      rows: rb.length,
      nodes: rb.nodes.map((n) => [n.length, n.nullCount]),
      buffers: regions,
      bodyLength: body.length,
      codec: 0,
    });
    parts.push(frame(meta, body));
  }
  parts.push(EOS);
  return Buffer.concat(parts);
}
