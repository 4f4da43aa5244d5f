import { DataType, Field, Schema, TimeUnit, Type } from 'apache-arrow';

/**
 * Arrow schemas as Lance's JSON schema (`lance::arrow::json::JsonSchema`), the `schema` of describe_table: the
 * official remote client parses it with that very type, and the namespace spec's JsonArrowSchema has the same shape:
 * `{fields: [{name, type: {type, fields?, length?}, nullable, metadata?}], metadata?}`.
 */
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

const UNIT: Record<number, string> = { [TimeUnit.SECOND]: 's', [TimeUnit.MILLISECOND]: 'ms', [TimeUnit.MICROSECOND]: 'us', [TimeUnit.NANOSECOND]: 'ns' };

const meta = (m: Map<string, string>) => (m && m.size > 0 ? Object.fromEntries(m) : undefined);

export function jsonDataType(t: DataType): JsonDataType {
  const a = t as any;
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
      return { type: a.precision === 0 ? 'halffloat' : a.precision === 1 ? 'float' : 'double' };
    case Type.Utf8:
      return { type: 'string' };
    case Type.LargeUtf8:
      return { type: 'large_string' };
    case Type.Binary:
      return { type: 'binary' };
    case Type.LargeBinary:
      return { type: 'large_binary' };
    case Type.FixedSizeBinary:
      return { type: 'fixed_size_binary', length: a.byteWidth };
    case Type.Decimal:
      return { type: `decimal:${a.bitWidth}:${a.precision}:${a.scale}` };
    case Type.Date:
    case Type.DateDay:
    case Type.DateMillisecond:
      return { type: a.unit === 0 ? 'date32:day' : 'date64:ms' };
    case Type.Time:
    case Type.TimeSecond:
    case Type.TimeMillisecond:
    case Type.TimeMicrosecond:
    case Type.TimeNanosecond:
      return { type: `${a.bitWidth === 32 ? 'time32' : 'time64'}:${UNIT[a.unit]}` };
    case Type.Timestamp:
    case Type.TimestampSecond:
    case Type.TimestampMillisecond:
    case Type.TimestampMicrosecond:
    case Type.TimestampNanosecond:
      return { type: `timestamp:${UNIT[a.unit]}:${a.timezone ?? '-'}` };
    case Type.Duration:
    case Type.DurationSecond:
    case Type.DurationMillisecond:
    case Type.DurationMicrosecond:
    case Type.DurationNanosecond:
      return { type: `duration:${UNIT[a.unit]}` };
    case Type.List:
      return { type: 'list', fields: [jsonField(a.children[0])] };
    case Type.FixedSizeList:
      return { type: 'fixed_size_list', fields: [jsonField(a.children[0])], length: a.listSize };
    case Type.Struct:
      return { type: 'struct', fields: (a.children as Field[]).map(jsonField) };
    case Type.Dictionary: {
      const value = jsonDataType(a.dictionary).type;
      const key = jsonDataType(a.indices).type;
      return { type: `dict:${value}:${key}:${Boolean(a.isOrdered)}` };
    }
    default:
      // Types Lance's JSON schema cannot express; the name keeps describe informative.
      return { type: String(t).toLowerCase() };
  }
}

export function jsonField(f: Field): JsonField {
  const m = meta(f.metadata);
  return { name: f.name, type: jsonDataType(f.type), nullable: f.nullable, ...(m ? { metadata: m } : {}) };
}

export function jsonSchema(s: Schema): JsonSchema {
  const m = meta(s.metadata);
  return { fields: s.fields.map(jsonField), ...(m ? { metadata: m } : {}) };
}
