// Kept whole (about 575 lines): one verifier, its flatbuffer reader, the Message/Schema walk and the batch checks
// share one node plan and one set of limits; split, a reviewer of the hostile-input defence would chase it across
// files (docs/hostile-input.md).
import { ApiError, Errors } from '../../platform/http/errors';

/**
 * A bounded verifier for the flatbuffer metadata of Arrow IPC messages (Message.fbs, Schema.fbs), run on every message
 * of an uploaded stream before anything reads it with generated accessors or apache-arrow's decoder.
 *
 * Why: flatbuffers accessors trust the buffer. An offset or a vector length pointing outside the bytes reads zeros,
 * not an error, so a vector "length" of 2^31 made apache-arrow's `Message.decode` build fields until the process ran
 * out of memory (issue 9: a 760-byte upload took a replica down). Here every offset, vtable and vector must lie inside
 * the bytes received, every table is counted each time it is reached (so one table listed many times, a DAG, cannot
 * multiply the work), and the Arrow-level sizes are capped: field count, nesting depth, name lengths, metadata
 * entries, dictionaries, nodes and buffers, rows. Work is linear in the metadata's size and capped by the limits.
 *
 * It also refuses what the native engine (arrow-rs) would panic or abort on rather than return an error: unknown
 * type ids, missing type tables, impossible bit widths and units, wrong child counts. Bodies are checked by the
 * caller against what this returns (buffer regions inside the body; compressed sizes, see arrow-ipc.ts).
 */

export interface IpcLimits {
  /** Fields of a schema at every nesting level, counted each time one is reached. */
  maxFields: number;
  /** Nesting depth of a field (a top-level column is depth 1). */
  maxDepth: number;
  /** Bytes of a field name, a metadata key, a timezone. */
  maxNameBytes: number;
  /** Entries of one custom-metadata list. */
  maxMetadataEntries: number;
  /** Dictionary-encoded fields of a schema. */
  maxDictionaries: number;
  /** Buffers of one record batch (variadic buffers included). */
  maxBuffers: number;
  /** Rows of one record batch. */
  maxRows: number;
}

/** What an uploaded stream may declare (docs/hostile-input.md). */
export const UNTRUSTED_LIMITS: Readonly<IpcLimits> = Object.freeze({
  maxFields: 10_000,
  maxDepth: 64,
  maxNameBytes: 64 * 1024,
  maxMetadataEntries: 10_000,
  maxDictionaries: 1_000,
  maxBuffers: 100_000,
  maxRows: 2 ** 31 - 1,
});

/** The engine's own output (query results): structure still verified, sizes not capped. */
export const TRUSTED_LIMITS: Readonly<IpcLimits> = Object.freeze({
  maxFields: Number.MAX_SAFE_INTEGER,
  maxDepth: 1_000,
  maxNameBytes: Number.MAX_SAFE_INTEGER,
  maxMetadataEntries: Number.MAX_SAFE_INTEGER,
  maxDictionaries: Number.MAX_SAFE_INTEGER,
  maxBuffers: Number.MAX_SAFE_INTEGER,
  maxRows: Number.MAX_SAFE_INTEGER,
});

export interface BufferRegion {
  offset: number;
  length: number;
}

/** One field node of a record batch, in the batch's (pre-order) order, and the buffers it owns. */
export interface NodePlan {
  /** Index of the parent's node, -1 for a column. */
  parent: number;
  /** For a fixed-size list: its size (its child has exactly parent length × size entries). */
  listSize?: number;
  /**
   * Its buffers (Arrow's columnar layout, format V5), each as the element width its size must be a multiple of (0: any
   * size). The first is the validity bitmap when `validity`.
   */
  widths: number[];
  validity: boolean;
  /** A view type: also owns the next entry of the batch's variadic buffer counts. */
  variadic?: boolean;
  union?: boolean;
}

export interface SchemaInfo {
  /** Fields at every level. */
  fields: number;
  /**
   * The field nodes a record batch of this schema carries, in order: every field, depth first, except the children
   * of dictionary-encoded fields (their values come in dictionary batches).
   */
  plan: NodePlan[];
  /** Dictionary ids the schema declares. */
  dictionaryIds: Set<number>;
}

export interface VerifiedMessage {
  kind: 'schema' | 'dictionary' | 'batch';
  bodyLength: number;
  /** Rows of a record batch (or of a dictionary batch's values). */
  rows: number;
  schema?: SchemaInfo;
  /** Record and dictionary batches: each field node's length and null count, buffer regions (inside the body). */
  nodeLengths?: number[];
  nullCounts?: number[];
  variadicCounts?: number[];
  /** The metadata version (V4 = 3 lays unions out with a validity buffer). */
  version?: number;
  buffers?: BufferRegion[];
  compressed?: boolean;
  dictionaryId?: number;
}

/** Arrow's `Type` union (Schema.fbs); 0 (NONE) is not a type. */
const T = {
  Null: 1,
  Int: 2,
  FloatingPoint: 3,
  Binary: 4,
  Utf8: 5,
  Bool: 6,
  Decimal: 7,
  Date: 8,
  Time: 9,
  Timestamp: 10,
  Interval: 11,
  List: 12,
  Struct: 13,
  Union: 14,
  FixedSizeBinary: 15,
  FixedSizeList: 16,
  Map: 17,
  Duration: 18,
  LargeBinary: 19,
  LargeUtf8: 20,
  LargeList: 21,
  RunEndEncoded: 22,
  BinaryView: 23,
  Utf8View: 24,
  ListView: 25,
  LargeListView: 26,
} as const;
const MAX_TYPE = 26;
/** Children a field of each type must have (undefined: any number, checked elsewhere). */
const CHILDREN: Record<number, number | undefined> = {
  [T.List]: 1,
  [T.LargeList]: 1,
  [T.ListView]: 1,
  [T.LargeListView]: 1,
  [T.FixedSizeList]: 1,
  [T.Map]: 1,
  [T.RunEndEncoded]: 2,
  [T.Struct]: undefined,
  [T.Union]: undefined,
};
/** Entries a field node may have beyond 8 per byte of its batch's buffers (see checkBatch). */
export const MAX_ENTRIES_WITHOUT_DATA = 65_536;
/** Buffers one field node may own at most (validity, offsets, values; views add variadic buffers). */
const MAX_BUFFERS_PER_NODE = 3;

const MessageHeader = { Schema: 1, DictionaryBatch: 2, RecordBatch: 3 } as const;
/** MetadataVersion V4 and V5: what arrow-rs reads (older versions lay out buffers differently). */
const MIN_VERSION = 3;
const MAX_VERSION = 4;

const bad = (msg: string): ApiError => Errors.invalidInput(`invalid Arrow IPC stream: ${msg}`);

interface Table {
  pos: number;
  vt: number;
  vtSize: number;
  size: number;
}

interface Vec {
  start: number;
  length: number;
}

/** Reads a flatbuffer only where it has checked that the bytes exist. Positions are relative to the buffer's start. */
class Reader {
  private readonly dv: DataView;
  readonly size: number;
  /**
   * Tables reached so far. Distinct tables take at least 4 bytes each, so more visits than size/4 means tables are
   * reached many times over (a DAG of shared tables): refused, which keeps the work linear in the size.
   */
  private visits = 0;

  constructor(buf: Uint8Array) {
    this.dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    this.size = buf.byteLength;
  }

  need(pos: number, n: number, what: string): void {
    if (!(pos >= 0 && n >= 0 && pos + n <= this.size)) throw bad(`${what} lies outside the message metadata`);
  }

  private aligned(pos: number, a: number, what: string): void {
    if (pos % a !== 0) throw bad(`${what} is not aligned`);
  }

  u8 = (p: number) => this.dv.getUint8(p);
  i8 = (p: number) => this.dv.getInt8(p);
  i16 = (p: number) => this.dv.getInt16(p, true);
  u16 = (p: number) => this.dv.getUint16(p, true);
  i32 = (p: number) => this.dv.getInt32(p, true);
  u32 = (p: number) => this.dv.getUint32(p, true);

  /** An int64 as a number; beyond ±2^53 it is no size or count anything here accepts. */
  i64(p: number, what: string): number {
    const v = this.dv.getBigInt64(p, true);
    if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER)) throw bad(`${what} ${v} is out of range`);
    return Number(v);
  }

  table(pos: number, what: string): Table {
    if (++this.visits > this.size / 4) throw bad('tables are reached more often than the metadata can hold (shared tables)');
    this.aligned(pos, 4, what);
    this.need(pos, 4, what);
    const vt = pos - this.i32(pos);
    this.aligned(vt, 2, `${what} vtable`);
    this.need(vt, 4, `${what} vtable`);
    const vtSize = this.u16(vt);
    const size = this.u16(vt + 2);
    if (vtSize < 4 || vtSize % 2 !== 0) throw bad(`${what} has a malformed vtable`);
    this.need(vt, vtSize, `${what} vtable`);
    if (size < 4) throw bad(`${what} has a malformed vtable`);
    this.need(pos, size, what);
    return { pos, vt, vtSize, size };
  }

  /** Position of field `slot` (inline size `n`) inside table `t`, or 0 when absent. */
  field(t: Table, slot: number, n: number, what: string): number {
    const vo = 4 + 2 * slot;
    if (vo + 2 > t.vtSize) return 0;
    const o = this.u16(t.vt + vo);
    if (o === 0) return 0;
    if (o + n > t.size) throw bad(`${what} lies outside its table`);
    const p = t.pos + o;
    this.aligned(p, Math.min(n, 8), what);
    return p;
  }

  scalar(t: Table, slot: number, n: 1 | 2 | 4, dflt: number, what: string, signed = true): number {
    const p = this.field(t, slot, n, what);
    if (!p) return dflt;
    if (n === 1) return signed ? this.i8(p) : this.u8(p);
    if (n === 2) return signed ? this.i16(p) : this.u16(p);
    return signed ? this.i32(p) : this.u32(p);
  }

  long(t: Table, slot: number, what: string): number {
    const p = this.field(t, slot, 8, what);
    return p ? this.i64(p, what) : 0;
  }

  /** Target of the offset field `slot`, or 0 when absent. */
  indirect(t: Table, slot: number, what: string): number {
    const p = this.field(t, slot, 4, what);
    if (!p) return 0;
    const target = p + this.u32(p);
    this.need(target, 4, what);
    return target;
  }

  subTable(t: Table, slot: number, what: string): Table | undefined {
    const p = this.indirect(t, slot, what);
    return p ? this.table(p, what) : undefined;
  }

  /** A string field: its length in bytes (checked against `max`), bytes and terminator inside the buffer. */
  string(t: Table, slot: number, max: number, what: string): number | undefined {
    const p = this.indirect(t, slot, what);
    if (!p) return undefined;
    this.aligned(p, 4, what);
    const n = this.u32(p);
    if (n > max) throw bad(`${what} is ${n} bytes, over the limit of ${max}`);
    this.need(p + 4, n + 1, what);
    if (this.u8(p + 4 + n) !== 0) throw bad(`${what} is not terminated`);
    return n;
  }

  /** A vector field of `elem`-byte elements (checked against `max` before anything is read from it). */
  vector(t: Table, slot: number, elem: number, max: number, what: string): Vec | undefined {
    const p = this.indirect(t, slot, what);
    if (!p) return undefined;
    this.aligned(p, 4, what);
    const length = this.u32(p);
    if (length > max) throw bad(`${what} has ${length} entries, over the limit of ${max}`);
    const start = p + 4;
    if (elem === 8 || elem === 16) this.aligned(start, 8, what);
    this.need(start, length * elem, what);
    return { start, length };
  }

  /** Element `i` of a vector of tables. */
  element(v: Vec, i: number, what: string): Table {
    const p = v.start + 4 * i;
    return this.table(p + this.u32(p), what);
  }
}

/** Verifies one message's metadata (the bytes after the length prefix). Throws a 400 on anything malformed. */
export function verifyMessage(meta: Uint8Array, limits: IpcLimits = UNTRUSTED_LIMITS): VerifiedMessage {
  const r = new Reader(meta);
  r.need(0, 4, 'the root offset');
  const msg = r.table(r.u32(0), 'the message');
  const version = r.scalar(msg, 0, 2, 0, 'the metadata version');
  if (version < MIN_VERSION || version > MAX_VERSION) throw bad(`unsupported metadata version ${version}`);
  const headerType = r.scalar(msg, 1, 1, 0, 'the header type', false);
  const header = r.subTable(msg, 2, 'the message header');
  const bodyLength = r.long(msg, 3, 'the body length');
  if (bodyLength < 0) throw bad(`bad body length ${bodyLength}`);
  keyValues(r, msg, 4, limits, 'the message metadata');
  if (!header) throw bad('a message without a header');
  switch (headerType) {
    case MessageHeader.Schema: {
      if (bodyLength !== 0) throw bad('a schema message with a body');
      return { kind: 'schema', bodyLength, rows: 0, schema: schema(r, header, limits) };
    }
    case MessageHeader.RecordBatch:
      return { kind: 'batch', bodyLength, version, ...recordBatch(r, header, bodyLength, limits, 'the record batch') };
    case MessageHeader.DictionaryBatch: {
      const id = r.long(header, 0, 'the dictionary id');
      const data = r.subTable(header, 1, 'the dictionary data');
      if (!data) throw bad('a dictionary batch without data');
      r.scalar(header, 2, 1, 0, 'isDelta', false);
      return {
        kind: 'dictionary',
        bodyLength,
        version,
        dictionaryId: id,
        ...recordBatch(r, data, bodyLength, limits, 'the dictionary batch'),
      };
    }
    default:
      throw bad(`unsupported message type ${headerType}`);
  }
}

function keyValues(r: Reader, t: Table, slot: number, limits: IpcLimits, what: string): void {
  const v = r.vector(t, slot, 4, limits.maxMetadataEntries, what);
  if (!v) return;
  for (let i = 0; i < v.length; i++) {
    const kv = r.element(v, i, `${what} entry`);
    r.string(kv, 0, limits.maxNameBytes, `${what} key`);
    r.string(kv, 1, r.size, `${what} value`);
  }
}

function schema(r: Reader, t: Table, limits: IpcLimits): SchemaInfo {
  const endianness = r.scalar(t, 0, 2, 0, 'the endianness');
  if (endianness !== 0) throw bad('big-endian data is not supported');
  const info: SchemaInfo = { fields: 0, plan: [], dictionaryIds: new Set() };
  const fields = r.vector(t, 1, 4, limits.maxFields, 'the schema fields');
  if (fields) for (let i = 0; i < fields.length; i++) field(r, r.element(fields, i, 'a field'), 1, limits, info, info.plan, -1);
  keyValues(r, t, 2, limits, 'the schema metadata');
  const features = r.vector(t, 3, 8, 64, 'the schema features');
  if (features) for (let i = 0; i < features.length; i++) r.i64(features.start + 8 * i, 'a feature');
  return info;
}

/** Verifies a field and its children, adding their nodes to `plan` (undefined inside a dictionary's value type). */
function field(
  r: Reader,
  f: Table,
  depth: number,
  limits: IpcLimits,
  info: SchemaInfo,
  plan: NodePlan[] | undefined,
  parent: number,
): void {
  if (depth > limits.maxDepth) throw bad(`fields nested deeper than ${limits.maxDepth} levels`);
  // Counted on every visit: a child listed many times (or a table shared by many fields) counts as many fields.
  if (++info.fields > limits.maxFields) throw bad(`more than ${limits.maxFields} fields`);
  r.string(f, 0, limits.maxNameBytes, 'a field name');
  r.scalar(f, 1, 1, 0, 'nullable', false);
  const typeId = r.scalar(f, 2, 1, 0, 'the field type id', false);
  if (typeId < 1 || typeId > MAX_TYPE) throw bad(`unknown field type ${typeId}`);
  const type = r.subTable(f, 3, 'the field type');
  if (!type) throw bad('a field without its type');
  let layout = fieldType(r, typeId, type, limits, parent);
  const dict = r.subTable(f, 4, 'the dictionary encoding');
  if (dict) {
    const id = r.long(dict, 0, 'the dictionary id');
    if (id < 0) throw bad(`bad dictionary id ${id}`);
    const index = r.subTable(dict, 1, 'the dictionary index type');
    // A dictionary-encoded field is laid out as its indices (32-bit signed when the index type is absent).
    layout = { parent, validity: true, widths: [0, index ? intType(r, index, 'the dictionary index type') / 8 : 4] };
    r.scalar(dict, 2, 1, 0, 'isOrdered', false);
    if (r.scalar(dict, 3, 2, 0, 'the dictionary kind') !== 0) throw bad('unsupported dictionary kind');
    if (info.dictionaryIds.has(id)) throw bad(`dictionary id ${id} is used twice`);
    info.dictionaryIds.add(id);
    if (info.dictionaryIds.size > limits.maxDictionaries) throw bad(`more than ${limits.maxDictionaries} dictionary-encoded fields`);
  }
  const children = r.vector(f, 5, 4, limits.maxFields, 'the field children');
  const n = children?.length ?? 0;
  const expected = CHILDREN[typeId];
  if (typeId in CHILDREN) {
    if (expected !== undefined && n !== expected) throw bad(`a field of type ${typeId} with ${n} children (expected ${expected})`);
  } else if (n !== 0) {
    throw bad(`a field of type ${typeId} with children`);
  }
  if (typeId === T.Union) {
    const ids = r.vector(type, 1, 4, limits.maxFields, 'the union type ids');
    if (ids && ids.length !== n) throw bad('a union whose type ids and children differ in number');
  }
  const index = plan ? plan.push(layout) - 1 : -1;
  // A dictionary-encoded field is one node (its indices) in a record batch; its values come in dictionary batches.
  const childPlan = dict ? undefined : plan;
  for (let i = 0; i < n; i++) field(r, r.element(children!, i, 'a child field'), depth + 1, limits, info, childPlan, index);
  keyValues(r, f, 6, limits, 'the field metadata');
}

/** Checks an Int type table; returns its bit width. */
function intType(r: Reader, t: Table, what: string): number {
  const width = r.scalar(t, 0, 4, 0, `${what} bit width`);
  if (![8, 16, 32, 64].includes(width)) throw bad(`${what} has bit width ${width}`);
  r.scalar(t, 1, 1, 0, `${what} signedness`, false);
  return width;
}

/**
 * Checks a field's type parameters — those arrow-rs would otherwise panic on (it matches them exhaustively) — and
 * returns the field's node layout (Arrow's Columnar.rst, "Buffer Listing for Each Layout", format V5).
 */
function fieldType(r: Reader, typeId: number, t: Table, limits: IpcLimits, parent: number): NodePlan {
  const unit = (slot: number, max: number, what: string): number => {
    const u = r.scalar(t, slot, 2, 0, what);
    if (u < 0 || u > max) throw bad(`${what} ${u} is not a known unit`);
    return u;
  };
  /** Validity bitmap, then buffers of these element widths. */
  const fixed = (...widths: number[]): NodePlan => ({ parent, validity: true, widths: [0, ...widths] });
  switch (typeId) {
    case T.Null:
    case T.RunEndEncoded:
      return { parent, validity: false, widths: [] };
    case T.Int:
      return fixed(intType(r, t, 'an integer type') / 8);
    case T.FloatingPoint:
      return fixed([2, 4, 8][unit(0, 2, 'the float precision')]);
    case T.Bool:
      return fixed(0);
    case T.Decimal: {
      const width = r.scalar(t, 2, 4, 128, 'the decimal bit width');
      if (![32, 64, 128, 256].includes(width)) throw bad(`a decimal of bit width ${width}`);
      const precision = r.scalar(t, 0, 4, 0, 'the decimal precision');
      if (precision < 1 || precision > 76) throw bad(`a decimal of precision ${precision}`);
      const scale = r.scalar(t, 1, 4, 0, 'the decimal scale');
      if (scale < -128 || scale > 127) throw bad(`a decimal of scale ${scale}`);
      return fixed(width / 8);
    }
    case T.Date:
      return fixed(unit(0, 1, 'the date unit') === 0 ? 4 : 8);
    case T.Time: {
      unit(0, 3, 'the time unit');
      const width = r.scalar(t, 1, 4, 32, 'the time bit width');
      if (width !== 32 && width !== 64) throw bad(`a time of bit width ${width}`);
      return fixed(width / 8);
    }
    case T.Timestamp:
      unit(0, 3, 'the timestamp unit');
      r.string(t, 1, limits.maxNameBytes, 'the timezone');
      return fixed(8);
    case T.Interval:
      return fixed([4, 8, 16][unit(0, 2, 'the interval unit')]);
    case T.Duration:
      unit(0, 3, 'the duration unit');
      return fixed(8);
    case T.FixedSizeBinary: {
      const w = r.scalar(t, 0, 4, 0, 'the byte width');
      if (w < 0) throw bad(`a fixed-size binary of width ${w}`);
      return fixed(0); // read as bytes: any size (writers pad buffers to 8 bytes, which need not be a multiple of w)
    }
    case T.Binary:
    case T.Utf8:
      return fixed(4, 0);
    case T.LargeBinary:
    case T.LargeUtf8:
      return fixed(8, 0);
    case T.BinaryView:
    case T.Utf8View:
      return { ...fixed(16), variadic: true };
    case T.List:
      return fixed(4);
    case T.LargeList:
      return fixed(8);
    case T.ListView:
      return fixed(4, 4);
    case T.LargeListView:
      return fixed(8, 8);
    case T.Map:
      r.scalar(t, 0, 1, 0, 'keysSorted', false);
      return fixed(4);
    case T.Struct:
      return fixed();
    case T.FixedSizeList: {
      const n = r.scalar(t, 0, 4, 0, 'the list size');
      if (n < 0) throw bad(`a fixed-size list of size ${n}`);
      return { ...fixed(), listSize: n };
    }
    case T.Union: {
      // No validity bitmap: type ids (one byte each), and for a dense union, 32-bit offsets.
      const dense = unit(0, 1, 'the union mode') === 1;
      return { parent, validity: false, union: true, widths: dense ? [1, 4] : [1] };
    }
    default:
      throw bad(`unknown field type ${typeId}`);
  }
}

function recordBatch(
  r: Reader,
  t: Table,
  bodyLength: number,
  limits: IpcLimits,
  what: string,
): Pick<VerifiedMessage, 'rows' | 'nodeLengths' | 'nullCounts' | 'variadicCounts' | 'buffers' | 'compressed'> {
  const rows = r.long(t, 0, `${what} length`);
  if (rows < 0 || rows > limits.maxRows) throw bad(`${what} of ${rows} rows (at most ${limits.maxRows})`);
  const nodes = r.vector(t, 1, 16, limits.maxFields, `${what} field nodes`);
  const nodeCount = nodes?.length ?? 0;
  const nodeLengths: number[] = [];
  const nullCounts: number[] = [];
  for (let i = 0; i < nodeCount; i++) {
    const p = nodes!.start + 16 * i;
    const length = r.i64(p, 'a field node length');
    const nulls = r.i64(p + 8, 'a field node null count');
    if (length < 0 || nulls < 0 || nulls > length) throw bad(`a field node of length ${length} with ${nulls} nulls`);
    nodeLengths.push(length);
    nullCounts.push(nulls);
  }
  let variadic = 0;
  const variadicCounts: number[] = [];
  const counts = r.vector(t, 4, 8, limits.maxBuffers, `${what} variadic buffer counts`);
  for (let i = 0; i < (counts?.length ?? 0); i++) {
    const c = r.i64(counts!.start + 8 * i, 'a variadic buffer count');
    if (c < 0) throw bad(`a variadic buffer count of ${c}`);
    variadic += c;
    variadicCounts.push(c);
  }
  const maxBuffers = Math.min(limits.maxBuffers, MAX_BUFFERS_PER_NODE * nodeCount + variadic);
  const vec = r.vector(t, 2, 16, maxBuffers, `${what} buffers`);
  const buffers: BufferRegion[] = [];
  for (let i = 0; i < (vec?.length ?? 0); i++) {
    const p = vec!.start + 16 * i;
    const offset = r.i64(p, 'a buffer offset');
    const length = r.i64(p + 8, 'a buffer length');
    if (offset < 0 || length < 0 || offset + length > bodyLength) {
      throw bad(`a buffer at ${offset} of ${length} bytes lies outside the ${bodyLength}-byte body`);
    }
    buffers.push({ offset, length });
  }
  let compressed = false;
  const c = r.subTable(t, 3, `${what} compression`);
  if (c) {
    const codec = r.scalar(c, 0, 1, 0, 'the compression codec');
    if (codec !== 0 && codec !== 1) throw bad(`unknown compression codec ${codec}`);
    if (r.scalar(c, 1, 1, 0, 'the compression method') !== 0) throw bad('unsupported compression method');
    compressed = true;
  }
  return { rows, nodeLengths, nullCounts, variadicCounts, buffers, compressed };
}

/**
 * A record batch against its schema: one field node per planned node, every column as long as the batch, every
 * fixed-size list's child exactly `size` times its parent, exactly the buffers the layout calls for, and a validity
 * bitmap long enough wherever there is one or nulls are declared. `sizes` are the buffers' sizes once decompressed.
 * (The engine checks the rest of the bodies; given nulls and no bitmap it was seen to panic inside a write and commit
 * an empty table.)
 */
export function checkBatch(info: SchemaInfo, v: VerifiedMessage, sizes: number[]): void {
  const lengths = v.nodeLengths ?? [];
  const nulls = v.nullCounts ?? [];
  const plan = info.plan;
  if (lengths.length !== plan.length) throw bad(`a record batch of ${lengths.length} field nodes for a schema of ${plan.length}`);
  const variadic = v.variadicCounts ?? [];
  const views = plan.filter((n) => n.variadic).length;
  if (variadic.length !== 0 && variadic.length !== views) throw bad(`${variadic.length} variadic buffer counts for ${views} view columns`);
  // Metadata V4 gave unions a validity buffer too (unused); V5 dropped it.
  const legacyUnions = (v.version ?? MAX_VERSION) < MAX_VERSION;
  let count = 0;
  for (let i = 0, view = 0; i < plan.length; i++) {
    count += plan[i].widths.length + (legacyUnions && plan[i].union ? 1 : 0);
    if (plan[i].variadic) count += variadic[view++] ?? 0;
  }
  if (count !== sizes.length) throw bad(`a record batch of ${sizes.length} buffers where its schema calls for ${count}`);
  checkEntries(v, sizes);
  for (let i = 0, b = 0, view = 0; i < plan.length; i++) {
    const node = plan[i];
    const parent = plan[node.parent];
    const expected = node.parent < 0 ? v.rows : parent.listSize !== undefined ? lengths[node.parent] * parent.listSize : undefined;
    if (expected !== undefined && lengths[i] !== expected)
      throw bad(`field node ${i} has length ${lengths[i]} where ${expected} is required`);
    if (legacyUnions && node.union) b++;
    if (node.validity) {
      const bitmap = sizes[b];
      if ((nulls[i] > 0 || bitmap > 0) && bitmap < Math.ceil(lengths[i] / 8)) {
        throw bad(`field node ${i} has ${nulls[i]} nulls in ${lengths[i]} rows and a validity bitmap of ${bitmap} bytes`);
      }
    }
    // The engine reads these as arrays of the width (and asserts, rather than reports, that they divide evenly).
    node.widths.forEach((w, k) => {
      if (w > 1 && sizes[b + k] % w !== 0) throw bad(`buffer ${b + k} of ${sizes[b + k]} bytes holds ${w}-byte values`);
    });
    b += node.widths.length;
    if (node.variadic) b += variadic[view++] ?? 0;
  }
}

/**
 * Every type but Null (and run-end encoding) needs at least a bit per entry: a field node far longer than its batch's
 * data could fill is all work and no bytes (a 300-byte upload of a null column of 2^31 rows kept the engine busy for
 * 20 s). Record and dictionary batches alike; `sizes` are the buffers' sizes once decompressed.
 */
export function checkEntries(v: VerifiedMessage, sizes: number[]): void {
  const bytes = sizes.reduce((t, x) => t + x, 0);
  const max = 8 * bytes + MAX_ENTRIES_WITHOUT_DATA;
  (v.nodeLengths ?? []).forEach((n, i) => {
    if (n > max) throw bad(`field node ${i} has ${n} entries, more than its batch's ${bytes} bytes of buffers can hold (at most ${max})`);
  });
}
