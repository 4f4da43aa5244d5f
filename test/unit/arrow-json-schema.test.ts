import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as arrow from 'apache-arrow';
import { ApiError } from '../../src/platform/http/errors';
import {
  JsonDataType,
  jsonDataType,
  jsonSchema,
  parseJsonDataType,
  parseJsonSchema,
  SchemaDialect,
} from '../../src/engine/arrow/arrow-json-schema';
import { NAMESPACE_READS } from '../helpers/namespace-types';

/**
 * Every Arrow type in both spellings of the JSON schema, both ways: what describe writes for the official remote
 * client (`lance`, read by `lance::arrow::json::JsonDataType`) and for namespace clients (`namespace`, read by the
 * Lance Namespace converters, `lance_namespace::schema::convert_json_arrow_type`), and what the gateway reads back.
 */

/** The names (or prefixes, ending in ':') `lance::arrow::json::JsonDataType` accepts. */
const LANCE_READS = [
  'null',
  'bool',
  'int8',
  'int16',
  'int32',
  'int64',
  'uint8',
  'uint16',
  'uint32',
  'uint64',
  'halffloat',
  'float',
  'double',
  'string',
  'binary',
  'large_string',
  'large_binary',
  'date32:day',
  'date64:ms',
  'time32:',
  'time64:',
  'timestamp:',
  'duration:',
  'dict:',
  'decimal:',
  'list',
  'large_list',
  'fixed_size_list',
  'struct',
  'fixed_size_binary',
];
const lanceReads = (name: string) => LANCE_READS.some((n) => (n.endsWith(':') ? name.startsWith(n) : name === n));

const field = (name: string, type: arrow.DataType, nullable = true) => new arrow.Field(name, type, nullable);
const f32 = () => field('item', new arrow.Float32());
const entries = () => field('entries', new arrow.Struct([field('key', new arrow.Utf8(), false), field('value', new arrow.Int32())]), false);

interface Case {
  name: string;
  type: arrow.DataType;
  lance: JsonDataType;
  namespace: JsonDataType;
  /** What each spelling reads back as: the same type unless given; `null` when the spelling cannot be read. */
  lanceBack?: arrow.DataType | null;
  namespaceBack?: arrow.DataType | null;
  /** The official reader of the spelling refuses it too (no spelling exists there). */
  lanceUnreadable?: boolean;
  namespaceUnreadable?: boolean;
}

const CASES: Case[] = [
  { name: 'Null', type: new arrow.Null(), lance: { type: 'null' }, namespace: { type: 'null' } },
  { name: 'Bool', type: new arrow.Bool(), lance: { type: 'bool' }, namespace: { type: 'bool' } },
  ...(
    [
      ['Int8', new arrow.Int8(), 'int8'],
      ['Int16', new arrow.Int16(), 'int16'],
      ['Int32', new arrow.Int32(), 'int32'],
      ['Int64', new arrow.Int64(), 'int64'],
      ['Uint8', new arrow.Uint8(), 'uint8'],
      ['Uint16', new arrow.Uint16(), 'uint16'],
      ['Uint32', new arrow.Uint32(), 'uint32'],
      ['Uint64', new arrow.Uint64(), 'uint64'],
    ] as const
  ).map(([name, type, n]): Case => ({ name, type, lance: { type: n }, namespace: { type: n } })),
  { name: 'Float16', type: new arrow.Float16(), lance: { type: 'halffloat' }, namespace: { type: 'float16' } },
  { name: 'Float32', type: new arrow.Float32(), lance: { type: 'float' }, namespace: { type: 'float32' } },
  { name: 'Float64', type: new arrow.Float64(), lance: { type: 'double' }, namespace: { type: 'float64' } },
  { name: 'Utf8', type: new arrow.Utf8(), lance: { type: 'string' }, namespace: { type: 'utf8' } },
  { name: 'LargeUtf8', type: new arrow.LargeUtf8(), lance: { type: 'large_string' }, namespace: { type: 'large_utf8' } },
  { name: 'Binary', type: new arrow.Binary(), lance: { type: 'binary' }, namespace: { type: 'binary' } },
  { name: 'LargeBinary', type: new arrow.LargeBinary(), lance: { type: 'large_binary' }, namespace: { type: 'large_binary' } },
  {
    name: 'FixedSizeBinary',
    type: new arrow.FixedSizeBinary(16),
    lance: { type: 'fixed_size_binary', length: 16 },
    namespace: { type: 'fixed_size_binary', length: 16 },
  },
  {
    name: 'Decimal128',
    type: new arrow.Decimal(10, 38, 128),
    lance: { type: 'decimal:128:38:10' },
    namespace: { type: 'decimal128', length: 38_010 },
  },
  {
    name: 'Decimal256',
    type: new arrow.Decimal(2, 76, 256),
    lance: { type: 'decimal:256:76:2' },
    namespace: { type: 'decimal256', length: 76_002 },
  },
  { name: 'DateDay', type: new arrow.DateDay(), lance: { type: 'date32:day' }, namespace: { type: 'date32' } },
  { name: 'DateMillisecond', type: new arrow.DateMillisecond(), lance: { type: 'date64:ms' }, namespace: { type: 'date64' } },
  // The namespace converters write a time's width without its unit and read no time type at all.
  ...(
    [
      ['TimeSecond', new arrow.TimeSecond(), 'time32:s', 'time32'],
      ['TimeMillisecond', new arrow.TimeMillisecond(), 'time32:ms', 'time32'],
      ['TimeMicrosecond', new arrow.TimeMicrosecond(), 'time64:us', 'time64'],
      ['TimeNanosecond', new arrow.TimeNanosecond(), 'time64:ns', 'time64'],
    ] as const
  ).map(([name, type, l, n]): Case => ({
    name,
    type,
    lance: { type: l },
    namespace: { type: n },
    namespaceBack: null,
    namespaceUnreadable: true,
  })),
  // …and a timestamp or duration without unit or zone, read as microseconds without a zone.
  {
    name: 'Timestamp(us, UTC)',
    type: new arrow.Timestamp(arrow.TimeUnit.MICROSECOND, 'UTC'),
    lance: { type: 'timestamp:us:UTC' },
    namespace: { type: 'timestamp' },
    namespaceBack: new arrow.Timestamp(arrow.TimeUnit.MICROSECOND),
  },
  {
    name: 'Timestamp(ns, no zone)',
    type: new arrow.Timestamp(arrow.TimeUnit.NANOSECOND),
    lance: { type: 'timestamp:ns:-' },
    namespace: { type: 'timestamp' },
    namespaceBack: new arrow.Timestamp(arrow.TimeUnit.MICROSECOND),
  },
  {
    name: 'Timestamp(s, +05:30)',
    type: new arrow.Timestamp(arrow.TimeUnit.SECOND, '+05:30'),
    lance: { type: 'timestamp:s:+05:30' },
    namespace: { type: 'timestamp' },
    namespaceBack: new arrow.Timestamp(arrow.TimeUnit.MICROSECOND),
  },
  {
    name: 'Timestamp(ms, America/New_York)',
    type: new arrow.Timestamp(arrow.TimeUnit.MILLISECOND, 'America/New_York'),
    lance: { type: 'timestamp:ms:America/New_York' },
    namespace: { type: 'timestamp' },
    namespaceBack: new arrow.Timestamp(arrow.TimeUnit.MICROSECOND),
  },
  ...(
    [
      ['DurationSecond', new arrow.DurationSecond(), 'duration:s'],
      ['DurationMillisecond', new arrow.DurationMillisecond(), 'duration:ms'],
      ['DurationMicrosecond', new arrow.DurationMicrosecond(), 'duration:us'],
      ['DurationNanosecond', new arrow.DurationNanosecond(), 'duration:ns'],
    ] as const
  ).map(([name, type, l]): Case => ({
    name,
    type,
    lance: { type: l },
    namespace: { type: 'duration' },
    namespaceBack: new arrow.Duration(arrow.TimeUnit.MICROSECOND),
  })),
  {
    name: 'List<Float32>',
    type: new arrow.List(f32()),
    lance: { type: 'list', fields: [{ name: 'item', type: { type: 'float' }, nullable: true }] },
    namespace: { type: 'list', fields: [{ name: 'item', type: { type: 'float32' }, nullable: true }] },
  },
  {
    name: 'FixedSizeList<Float32, 4> (a vector column)',
    type: new arrow.FixedSizeList(4, f32()),
    lance: { type: 'fixed_size_list', fields: [{ name: 'item', type: { type: 'float' }, nullable: true }], length: 4 },
    namespace: { type: 'fixed_size_list', fields: [{ name: 'item', type: { type: 'float32' }, nullable: true }], length: 4 },
  },
  {
    name: 'Struct<a: Int32, s: Utf8 not null>',
    type: new arrow.Struct([field('a', new arrow.Int32()), field('s', new arrow.Utf8(), false)]),
    lance: {
      type: 'struct',
      fields: [
        { name: 'a', type: { type: 'int32' }, nullable: true },
        { name: 's', type: { type: 'string' }, nullable: false },
      ],
    },
    namespace: {
      type: 'struct',
      fields: [
        { name: 'a', type: { type: 'int32' }, nullable: true },
        { name: 's', type: { type: 'utf8' }, nullable: false },
      ],
    },
  },
  {
    // Lance's JSON schema has no map (its reader refuses one); the namespace converters read `map` with its entries.
    name: 'Map<Utf8, Int32>',
    type: new arrow.Map_(entries() as never),
    lance: {
      type: 'map',
      fields: [
        {
          name: 'entries',
          type: {
            type: 'struct',
            fields: [
              { name: 'key', type: { type: 'string' }, nullable: false },
              { name: 'value', type: { type: 'int32' }, nullable: true },
            ],
          },
          nullable: false,
        },
      ],
    },
    namespace: {
      type: 'map',
      fields: [
        {
          name: 'entries',
          type: {
            type: 'struct',
            fields: [
              { name: 'key', type: { type: 'utf8' }, nullable: false },
              { name: 'value', type: { type: 'int32' }, nullable: true },
            ],
          },
          nullable: false,
        },
      ],
    },
    lanceUnreadable: true,
  },
  {
    // Lance writes the value and index types (ordered always false); the namespace converters the value type only.
    name: 'Dictionary<Int32, Utf8>',
    type: new arrow.Dictionary(new arrow.Utf8(), new arrow.Int32()),
    lance: { type: 'dict:string:int32:false' },
    namespace: { type: 'utf8' },
    namespaceBack: new arrow.Utf8(),
  },
  {
    name: 'IntervalDayTime',
    type: new arrow.IntervalDayTime(),
    lance: { type: 'interval' },
    namespace: { type: 'interval' },
    lanceBack: null,
    namespaceBack: null,
    lanceUnreadable: true,
    namespaceUnreadable: true,
  },
  {
    name: 'DenseUnion',
    type: new arrow.DenseUnion([0, 1], [field('i', new arrow.Int32()), field('s', new arrow.Utf8())]),
    lance: { type: 'union' },
    namespace: { type: 'union' },
    lanceBack: null,
    namespaceBack: null,
    lanceUnreadable: true,
    namespaceUnreadable: true,
  },
];

const invalid = (e: unknown) => e instanceof ApiError && e.status === 400 && e.code === 13;
/** Equal types: same printed form (unit, zone, precision, widths, children) and same child names and nullability. */
function sameType(a: arrow.DataType, b: arrow.DataType, what: string) {
  assert.equal(String(a), String(b), what);
  assert.equal(a.typeId, b.typeId, what);
  const ca = (a.children ?? []) as arrow.Field[];
  const cb = (b.children ?? []) as arrow.Field[];
  assert.deepEqual(
    ca.map((f) => [f.name, f.nullable]),
    cb.map((f) => [f.name, f.nullable]),
    what,
  );
  ca.forEach((f, i) => sameType(f.type, cb[i].type, `${what} / ${f.name}`));
}

for (const dialect of ['lance', 'namespace'] as SchemaDialect[]) {
  describe(`arrow JSON schema, ${dialect} spelling`, () => {
    for (const c of CASES) {
      test(c.name, () => {
        const expected = c[dialect];
        assert.deepEqual(jsonDataType(c.type, dialect), expected, 'written');

        const unreadable = dialect === 'lance' ? c.lanceUnreadable : c.namespaceUnreadable;
        const officialReads = dialect === 'lance' ? lanceReads(expected.type) : NAMESPACE_READS.has(expected.type);
        assert.equal(officialReads, !unreadable, `the official ${dialect} reader ${unreadable ? 'refuses' : 'reads'} '${expected.type}'`);

        const back = dialect === 'lance' ? c.lanceBack : c.namespaceBack;
        if (back === null) {
          assert.throws(() => parseJsonDataType(expected), invalid, 'read back: a 400 saying the type is unsupported');
          return;
        }
        const parsed = parseJsonDataType(expected);
        sameType(parsed, back ?? c.type, 'read back');
        // What is read back is written the same way again.
        assert.deepEqual(jsonDataType(parsed, dialect), expected, 'written again');
      });
    }
  });
}

describe('arrow JSON schema: the official readers never meet the other spelling', () => {
  test('no primitive the namespace converters read is written for the remote client, where the spellings differ', () => {
    for (const c of CASES) {
      const l = jsonDataType(c.type, 'lance').type;
      const n = jsonDataType(c.type, 'namespace').type;
      if (l !== n) {
        assert.ok(!NAMESPACE_READS.has(l) || l === 'timestamp', `${c.name}: '${l}'`);
        assert.ok(!lanceReads(n), `${c.name}: '${n}' would mean something else to Lance`);
      }
    }
  });
});

describe('arrow JSON schema: reading', () => {
  test('names are read without regard to case, a time zone keeps its case', () => {
    sameType(parseJsonDataType({ type: 'UTF8' }), new arrow.Utf8(), 'UTF8');
    sameType(parseJsonDataType({ type: 'Float64' }), new arrow.Float64(), 'Float64');
    sameType(parseJsonDataType({ type: 'boolean' }), new arrow.Bool(), 'boolean');
    sameType(
      parseJsonDataType({ type: 'timestamp:us:Europe/Paris' }),
      new arrow.Timestamp(arrow.TimeUnit.MICROSECOND, 'Europe/Paris'),
      'zone',
    );
  });

  test('a namespace decimal with a negative scale is decoded as the converters do', () => {
    const d = parseJsonDataType({ type: 'decimal128', length: 10 * 1000 - 2 }) as arrow.Decimal;
    assert.equal(d.precision, 10);
    assert.equal(d.scale, -2);
    assert.equal(d.bitWidth, 128);
    assert.deepEqual(jsonDataType(d, 'namespace'), { type: 'decimal128', length: 9_998 });
    const small = parseJsonDataType({ type: 'decimal64', length: 18_004 }) as arrow.Decimal;
    assert.deepEqual([small.precision, small.scale, small.bitWidth], [18, 4, 64]);
  });

  test("Lance's storage form of a fixed-size binary is read too", () => {
    sameType(parseJsonDataType({ type: 'fixed_size_binary:8' }), new arrow.FixedSizeBinary(8), 'fixed_size_binary:8');
  });

  test('malformed or unknown types are a 400 (code 13) naming the type', () => {
    const bad: JsonDataType[] = [
      { type: 'string_view' },
      { type: 'large_list', fields: [{ name: 'item', type: { type: 'int32' }, nullable: true }] },
      { type: 'time32:us' },
      { type: 'time64' },
      { type: 'timestamp:xs:-' },
      { type: 'timestamp:us' },
      { type: 'duration:h' },
      { type: 'decimal:64:10:2' },
      { type: 'decimal:128:x:2' },
      { type: 'decimal128' },
      { type: 'dict:string:float:false' },
      { type: 'dict:string' },
      { type: 'fixed_size_binary' },
      { type: 'fixed_size_list', fields: [{ name: 'item', type: { type: 'float32' }, nullable: true }] },
      { type: 'fixed_size_list', length: 4 },
      { type: 'list' },
      { type: 'struct' },
      { type: 'map', fields: [{ name: 'entries', type: { type: 'int32' }, nullable: false }] },
      { type: 'list', fields: [{ name: 'item', type: { type: 'nope' }, nullable: true }] },
    ];
    for (const b of bad) {
      assert.throws(
        () => parseJsonDataType(b),
        (e: unknown) => invalid(e) && (e as Error).message.includes(String(b.type === 'list' && b.fields ? 'nope' : b.type)),
        JSON.stringify(b),
      );
    }
    assert.throws(() => parseJsonDataType({} as JsonDataType), invalid);
    assert.throws(() => parseJsonDataType(null as unknown as JsonDataType), invalid);
  });

  test('a whole schema round-trips in both spellings, with field and schema metadata', () => {
    const schema = new arrow.Schema(
      [
        new arrow.Field('id', new arrow.Int64(), false),
        new arrow.Field('name', new arrow.Utf8(), true, new Map([['comment', 'display name']])),
        new arrow.Field('vector', new arrow.FixedSizeList(3, f32()), true),
        new arrow.Field('at', new arrow.Timestamp(arrow.TimeUnit.MICROSECOND), true),
        new arrow.Field('tags', new arrow.List(field('item', new arrow.Utf8())), true),
      ],
      new Map([['owner', 'sales']]),
    );
    for (const dialect of ['lance', 'namespace'] as SchemaDialect[]) {
      const json = jsonSchema(schema, dialect);
      assert.deepEqual(json.metadata, { owner: 'sales' });
      assert.deepEqual(json.fields[1].metadata, { comment: 'display name' });
      assert.equal(json.fields[0].metadata, undefined, 'no empty metadata');
      const back = parseJsonSchema(JSON.parse(JSON.stringify(json)));
      assert.deepEqual(
        back.fields.map((f) => f.name),
        ['id', 'name', 'vector', 'at', 'tags'],
      );
      back.fields.forEach((f, i) => {
        sameType(f.type, schema.fields[i].type, `${dialect} ${f.name}`);
        assert.equal(f.nullable, schema.fields[i].nullable);
      });
      assert.equal(back.metadata.get('owner'), 'sales');
      assert.equal(back.fields[1].metadata.get('comment'), 'display name');
    }
    assert.throws(() => parseJsonSchema({} as never), invalid);
    assert.throws(() => parseJsonSchema({ fields: [{ type: { type: 'int32' }, nullable: true }] } as never), invalid);
  });
});
