import {
  Binary,
  Bool,
  DataType,
  DateDay,
  DateMillisecond,
  Decimal,
  Dictionary,
  Duration,
  Field,
  FixedSizeBinary,
  FixedSizeList,
  Float16,
  Float32,
  Float64,
  Int16,
  Int32,
  Int64,
  Int8,
  LargeBinary,
  LargeUtf8,
  List,
  Map_,
  Null,
  Schema,
  Struct,
  Time,
  TimeUnit,
  Timestamp,
  Type,
  Uint16,
  Uint32,
  Uint64,
  Uint8,
  Utf8,
} from 'apache-arrow';
import { Errors } from '../../platform/http/errors';

/**
 * Arrow schemas as JSON: `{fields: [{name, type: {type, fields?, length?}, nullable, metadata?}], metadata?}`, the
 * spec's JsonArrowSchema. The shape is one, but the official clients spell the type names two ways:
 *
 * - `lance`: Lance's own JSON schema (`lance::arrow::json::JsonSchema`), which the official **remote** client parses
 *   describe's `schema` with: `string`, `large_string`, `halffloat`/`float`/`double`, `date32:day`,
 *   `timestamp:us:UTC`, `decimal:128:38:10`, `dict:string:int32:false`, …
 * - `namespace`: the Lance Namespace converters (`lance_namespace::schema` in Rust, the Python implementations),
 *   what namespace clients and the spec's own tooling read: `utf8`, `large_utf8`, `float16`/`float32`/`float64`,
 *   `date32`, `timestamp`, `decimal128` with `length` = precision × 1000 + scale, `map`, … Those converters answer
 *   "Unsupported Arrow type: string" to the `lance` names, and the remote client refuses the `namespace` ones, so
 *   describe answers each client in its own spelling.
 *
 * What each spelling cannot express is written the way its official emitter writes it (e.g. `namespace` drops a
 * timestamp's unit and zone, as `lance_namespace::schema::arrow_schema_to_json` does). `parseJsonDataType` reads
 * both spellings.
 */
export type SchemaDialect = 'lance' | 'namespace';

export interface JsonDataType {
  type: string;
  fields?: JsonField[];
  length?: number;
}
export interface JsonField {
  name: string;
  type: JsonDataType;
  nullable: boolean;
  metadata?: Record<string, string>;
}
export interface JsonSchema {
  fields: JsonField[];
  metadata?: Record<string, string>;
}

const UNIT: Record<number, string> = {
  [TimeUnit.SECOND]: 's',
  [TimeUnit.MILLISECOND]: 'ms',
  [TimeUnit.MICROSECOND]: 'us',
  [TimeUnit.NANOSECOND]: 'ns',
};
const UNIT_OF: Record<string, TimeUnit> = {
  s: TimeUnit.SECOND,
  ms: TimeUnit.MILLISECOND,
  us: TimeUnit.MICROSECOND,
  ns: TimeUnit.NANOSECOND,
};

const meta = (m: Map<string, string>) => (m && m.size > 0 ? Object.fromEntries(m) : undefined);

/** The primitive names that differ between the two spellings (everything else is spelled alike). */
const NAMES: Record<
  SchemaDialect,
  { f16: string; f32: string; f64: string; utf8: string; largeUtf8: string; date32: string; date64: string }
> = {
  lance: {
    f16: 'halffloat',
    f32: 'float',
    f64: 'double',
    utf8: 'string',
    largeUtf8: 'large_string',
    date32: 'date32:day',
    date64: 'date64:ms',
  },
  namespace: { f16: 'float16', f32: 'float32', f64: 'float64', utf8: 'utf8', largeUtf8: 'large_utf8', date32: 'date32', date64: 'date64' },
};

export function jsonDataType(t: DataType, dialect: SchemaDialect): JsonDataType {
  // Arrow's DataType subclasses each carry their own fields (precision, unit, listSize, …): read here by name.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const a = t as any;
  const n = NAMES[dialect];
  const lance = dialect === 'lance';
  switch (t.typeId) {
    case Type.Null:
      return { type: 'null' };
    case Type.Bool:
      return { type: 'bool' };
    case Type.Int8:
    case Type.Int16:
    case Type.Int32:
    case Type.Int64:
    case Type.Uint8:
    case Type.Uint16:
    case Type.Uint32:
    case Type.Uint64:
    case Type.Int:
      return { type: `${a.isSigned ? 'int' : 'uint'}${a.bitWidth}` };
    case Type.Float16:
    case Type.Float32:
    case Type.Float64:
    case Type.Float:
      return { type: a.precision === 0 ? n.f16 : a.precision === 1 ? n.f32 : n.f64 };
    case Type.Utf8:
      return { type: n.utf8 };
    case Type.LargeUtf8:
      return { type: n.largeUtf8 };
    case Type.Binary:
      return { type: 'binary' };
    case Type.LargeBinary:
      return { type: 'large_binary' };
    case Type.FixedSizeBinary:
      return { type: 'fixed_size_binary', length: a.byteWidth };
    case Type.Decimal:
      // The namespace converters carry precision and scale in `length`, as precision * 1000 + scale.
      return lance
        ? { type: `decimal:${a.bitWidth}:${a.precision}:${a.scale}` }
        : { type: `decimal${a.bitWidth}`, length: a.precision * 1000 + a.scale };
    case Type.Date:
    case Type.DateDay:
    case Type.DateMillisecond:
      return { type: a.unit === 0 ? n.date32 : n.date64 };
    case Type.Time:
    case Type.TimeSecond:
    case Type.TimeMillisecond:
    case Type.TimeMicrosecond:
    case Type.TimeNanosecond: {
      const base = a.bitWidth === 32 ? 'time32' : 'time64';
      return { type: lance ? `${base}:${UNIT[a.unit]}` : base };
    }
    case Type.Timestamp:
    case Type.TimestampSecond:
    case Type.TimestampMillisecond:
    case Type.TimestampMicrosecond:
    case Type.TimestampNanosecond:
      return { type: lance ? `timestamp:${UNIT[a.unit]}:${a.timezone ?? '-'}` : 'timestamp' };
    case Type.Duration:
    case Type.DurationSecond:
    case Type.DurationMillisecond:
    case Type.DurationMicrosecond:
    case Type.DurationNanosecond:
      return { type: lance ? `duration:${UNIT[a.unit]}` : 'duration' };
    case Type.List:
      return { type: 'list', fields: [jsonField(a.children[0], dialect)] };
    case Type.FixedSizeList:
      return { type: 'fixed_size_list', fields: [jsonField(a.children[0], dialect)], length: a.listSize };
    case Type.Struct:
      return { type: 'struct', fields: (a.children as Field[]).map((f) => jsonField(f, dialect)) };
    case Type.Map:
      return { type: 'map', fields: [jsonField(a.children[0], dialect)] };
    case Type.Dictionary:
      // Lance writes `ordered` as false always (arrow-rs has no such flag); the namespace converters name the values.
      return lance
        ? { type: `dict:${jsonDataType(a.dictionary, dialect).type}:${jsonDataType(a.indices, dialect).type}:false` }
        : jsonDataType(a.dictionary, dialect);
    case Type.Interval:
    case Type.IntervalDayTime:
    case Type.IntervalYearMonth:
      return { type: 'interval' };
    case Type.Union:
    case Type.DenseUnion:
    case Type.SparseUnion:
      return { type: 'union' };
    default:
      // No spelling in either dialect; the name keeps describe informative.
      return { type: String(t).toLowerCase() };
  }
}

export function jsonField(f: Field, dialect: SchemaDialect): JsonField {
  const m = meta(f.metadata);
  return { name: f.name, type: jsonDataType(f.type, dialect), nullable: f.nullable, ...(m ? { metadata: m } : {}) };
}

export function jsonSchema(s: Schema, dialect: SchemaDialect): JsonSchema {
  const m = meta(s.metadata);
  return { fields: s.fields.map((f) => jsonField(f, dialect)), ...(m ? { metadata: m } : {}) };
}

// ---------------------------------------------------------------------------------------------- parsing

const SIMPLE: Record<string, () => DataType> = {
  null: () => new Null(),
  bool: () => new Bool(),
  boolean: () => new Bool(),
  int8: () => new Int8(),
  int16: () => new Int16(),
  int32: () => new Int32(),
  int64: () => new Int64(),
  uint8: () => new Uint8(),
  uint16: () => new Uint16(),
  uint32: () => new Uint32(),
  uint64: () => new Uint64(),
  halffloat: () => new Float16(),
  float16: () => new Float16(),
  float: () => new Float32(),
  float32: () => new Float32(),
  double: () => new Float64(),
  float64: () => new Float64(),
  string: () => new Utf8(),
  utf8: () => new Utf8(),
  large_string: () => new LargeUtf8(),
  large_utf8: () => new LargeUtf8(),
  binary: () => new Binary(),
  large_binary: () => new LargeBinary(),
  'date32:day': () => new DateDay(),
  date32: () => new DateDay(),
  'date64:ms': () => new DateMillisecond(),
  date64: () => new DateMillisecond(),
  // The namespace spelling has no unit: its converters read microseconds.
  timestamp: () => new Timestamp(TimeUnit.MICROSECOND),
  duration: () => new Duration(TimeUnit.MICROSECOND),
};

const unsupported = (name: string, why = '') =>
  Errors.invalidInput(`unsupported Arrow type '${name}' in a JSON schema${why ? `: ${why}` : ''}`);

function unitOf(name: string, unit: string | undefined, allowed: string[]): TimeUnit {
  if (unit === undefined || !allowed.includes(unit)) throw unsupported(name, `the unit must be one of ${allowed.join(', ')}`);
  return UNIT_OF[unit];
}

function lengthOf(json: JsonDataType, name: string): number {
  const l = json.length;
  if (typeof l !== 'number' || !Number.isInteger(l) || l < 0) throw unsupported(name, '`length` must be a non-negative integer');
  return l;
}

function childOf(json: JsonDataType, name: string): Field {
  const f = json.fields?.[0];
  if (!f) throw unsupported(name, 'it needs its child in `fields`');
  return parseJsonField(f);
}

/**
 * An Arrow type from its JSON form, in either spelling (`lance` or `namespace`, see above). Names are matched without
 * regard to case, as the namespace converters do; a time zone keeps its case.
 */
export function parseJsonDataType(json: JsonDataType): DataType {
  if (!json || typeof json !== 'object' || typeof json.type !== 'string')
    throw Errors.invalidInput('a JSON Arrow type needs a string `type`');
  const raw = json.type.trim();
  const name = raw.toLowerCase();
  const simple = SIMPLE[name];
  if (simple) return simple();
  const parts = name.split(':');
  switch (parts[0]) {
    case 'time32':
      return new Time(unitOf(raw, parts[1], ['s', 'ms']), 32);
    case 'time64':
      return new Time(unitOf(raw, parts[1], ['us', 'ns']), 64);
    case 'duration':
      return new Duration(unitOf(raw, parts[1], ['s', 'ms', 'us', 'ns']));
    case 'timestamp': {
      // `timestamp:<unit>:<zone or ->`; the zone may itself hold ':' (`+05:30`).
      const rawParts = raw.split(':');
      const zone = rawParts.slice(2).join(':');
      if (rawParts.length < 3 || zone === '') throw unsupported(raw, 'expected timestamp:<unit>:<zone or ->');
      return new Timestamp(unitOf(raw, parts[1], ['s', 'ms', 'us', 'ns']), zone === '-' ? null : zone);
    }
    case 'decimal': {
      // Lance: decimal:<bits>:<precision>:<scale>
      const [bits, precision, scale] = parts.slice(1).map(Number);
      if (parts.length !== 4 || ![128, 256].includes(bits) || !Number.isInteger(precision) || !Number.isInteger(scale)) {
        throw unsupported(raw, 'expected decimal:<128|256>:<precision>:<scale>');
      }
      return new Decimal(scale, precision, bits);
    }
    case 'decimal32':
    case 'decimal64':
    case 'decimal128':
    case 'decimal256': {
      // Namespace: `length` = precision * 1000 + scale; a negative scale is decoded as the converters do.
      if (parts.length !== 1) break;
      const encoded = json.length;
      if (typeof encoded !== 'number' || !Number.isInteger(encoded)) throw unsupported(raw, '`length` must hold precision * 1000 + scale');
      const precision = Math.floor((encoded + 128) / 1000);
      return new Decimal(encoded - precision * 1000, precision, Number(name.slice('decimal'.length)));
    }
    case 'dict': {
      // Lance: dict:<value type>:<index type>:<ordered>
      if (parts.length !== 4) throw unsupported(raw, 'expected dict:<value type>:<index type>:<ordered>');
      const indices = parseJsonDataType({ type: parts[2] });
      if (!DataType.isInt(indices)) throw unsupported(raw, 'the index type must be an integer type');
      return new Dictionary(parseJsonDataType({ type: parts[1] }), indices as never, null, parts[3] === 'true');
    }
    case 'fixed_size_binary':
      // Both spellings carry the width in `length`; Lance's storage form `fixed_size_binary:<n>` is read too.
      return new FixedSizeBinary(parts.length === 2 ? lengthOf({ type: raw, length: Number(parts[1]) }, raw) : lengthOf(json, raw));
    case 'list':
      if (parts.length === 1) return new List(childOf(json, raw));
      break;
    case 'fixed_size_list':
      if (parts.length === 1) return new FixedSizeList(lengthOf(json, raw), childOf(json, raw));
      break;
    case 'struct':
      if (parts.length !== 1) break;
      if (!Array.isArray(json.fields)) throw unsupported(raw, 'it needs its members in `fields`');
      return new Struct(json.fields.map(parseJsonField));
    case 'map': {
      if (parts.length !== 1) break;
      const entries = childOf(json, raw);
      if (!DataType.isStruct(entries.type) || entries.type.children.length !== 2) {
        throw unsupported(raw, 'its child must be a struct of key and value');
      }
      return new Map_(entries as never);
    }
    case 'large_list':
      throw unsupported(raw, 'large lists are not supported by this server');
  }
  throw unsupported(raw);
}

export function parseJsonField(json: JsonField): Field {
  if (!json || typeof json !== 'object' || typeof json.name !== 'string')
    throw Errors.invalidInput('a JSON Arrow field needs a string `name`');
  if (json.nullable !== undefined && typeof json.nullable !== 'boolean')
    throw Errors.invalidInput(`field '${json.name}': \`nullable\` must be a boolean`);
  const metadata = json.metadata ? new Map(Object.entries(json.metadata)) : undefined;
  return new Field(json.name, parseJsonDataType(json.type), json.nullable ?? true, metadata);
}

export function parseJsonSchema(json: JsonSchema): Schema {
  if (!json || typeof json !== 'object' || !Array.isArray(json.fields)) throw Errors.invalidInput('a JSON Arrow schema needs `fields`');
  const metadata = json.metadata ? new Map(Object.entries(json.metadata)) : undefined;
  return new Schema(json.fields.map(parseJsonField), metadata);
}
