import * as arrow from 'apache-arrow';
import { Prng } from './prng';

/**
 * What the fuzz test sends: hostile strings, their encodings in a URL, JSON bodies generated from the gateway's own
 * OpenAPI schemas (then mutated), and Arrow IPC bodies (valid, then mutated). Every generator takes the PRNG, so a
 * seed reproduces the same bytes.
 *
 * Names the fuzzer makes start with `fz_` and hostile strings carry `FUZZ`, so a listing of a database the fuzzer
 * must not reach can be checked for them.
 */
export const MARKERS = ['fz_', 'FUZZ'];

/** Strings a hostile client puts anywhere a string goes. */
export const HOSTILE_STRINGS: readonly string[] = [
  '',
  ' ',
  'FUZZ\u0000',
  'a\u0000b',
  '\u0000',
  'FUZZ\ud800',
  '\udc00FUZZ',
  'x\ud83dy',
  '%ff',
  '%00',
  '%',
  '%zz',
  '%2e%2e',
  '..',
  '../',
  '../../../../etc/passwd',
  '..\\..\\windows',
  '/',
  '\\',
  "'",
  '"',
  '`',
  "FUZZ' OR '1'='1",
  'x\'); DROP TABLE "Database"; --',
  '${jndi:ldap://127.0.0.1/FUZZ}',
  '${7*7}',
  '{{7*7}}',
  '<script>FUZZ</script>',
  '\r\nX-Injected: FUZZ',
  'a\nb',
  '\t',
  'FUZZ'.repeat(1300), // > 4096 characters: past Fastify's maxParamLength
  'A'.repeat(300),
  'ñandú日本語🙂FUZZ',
  '\u202eFUZZ',
  'FUZZ\u200b',
  '\ufeffFUZZ',
  '$',
  '$$',
  '%24',
  '$FUZZ$',
  '.',
  '-',
  '_',
  'null',
  'undefined',
  '__proto__',
  'constructor',
  'NaN',
  '-1',
  '1e309',
  'CON',
  'FUZZ;ls',
  'FUZZ|id',
  '*',
  'FUZZ?x=1',
  'FUZZ#frag',
  '\u00ff\u00fe',
];

/** Names that follow the name rule: the fixtures, names to create, names that do not exist. */
export const FUZZ_NAMES: readonly string[] = [
  'fz_a',
  'fz_b',
  'fz_c',
  'fz_d',
  'fz_t1',
  'fz_t2',
  'fz_n1',
  'fz_n2',
  'fz_gone',
  'fz.dot',
  'fz-dash',
];

export const FILTERS: readonly string[] = [
  'id > 3',
  'id = 1',
  'id < 0',
  'id IN (1, 2, 3)',
  "name = 'n-1'",
  "text LIKE '%apple%'",
  'vector IS NULL',
  'id IS NOT NULL AND id % 2 = 0',
  '$',
  '${jndi:x}',
  "name = 'a\u0000'",
  'id >',
  '1=1',
  'true',
  '',
  ' ',
  'nonexistent > 1',
  'id > 1 AND',
  'id > 1; DROP TABLE x',
  "cast(id as varchar) = 'x'",
  "regexp_match(text, '(a+)+$') IS NOT NULL",
  '('.repeat(500) + 'id > 1' + ')'.repeat(500),
  'id > ' + '9'.repeat(400),
  'id = 1e400',
  'id / 0 > 1',
  "name = '\ud800'",
  'FUZZ',
  'id IN (' + Array.from({ length: 2000 }, (_, i) => i).join(',') + ')',
  'array_has(vector, 1.0)',
  'unnest(vector) > 0',
  'sleep(100)',
];

export const COLUMNS: readonly string[] = [
  'id',
  'name',
  'vector',
  'text',
  'writer',
  'fz_c',
  'nonexistent',
  '',
  'id.x',
  'vector.item',
  '_rowid',
  '_distance',
  '*',
];

const EXPRESSIONS: readonly string[] = [
  'id + 1',
  "'x'",
  'id * 2',
  'NULL',
  "concat(name, 'FUZZ')",
  '$',
  '${jndi:x}',
  'id +',
  "'\u0000'",
  'cast(id as float)',
  '1/0',
  'random()',
];

const INDEX_TYPES: readonly string[] = [
  'BTREE',
  'BITMAP',
  'LABEL_LIST',
  'FTS',
  'INVERTED',
  'IVF_PQ',
  'IVF_HNSW_SQ',
  'IVF_HNSW_PQ',
  'IVF_FLAT',
  'IVF_RQ',
  'SCALAR',
  'VECTOR',
  'btree',
  'bogus',
  '',
];

const DISTANCES: readonly string[] = ['l2', 'cosine', 'dot', 'hamming', 'L2', 'COSINE', 'bogus', ''];

const MODES: readonly string[] = [
  'Create',
  'ExistOk',
  'Overwrite',
  'create',
  'exist_ok',
  'overwrite',
  'append',
  'Fail',
  'Skip',
  'CREATE',
  'bogus',
  '',
];

export const NUMBERS: readonly number[] = [
  0,
  1,
  2,
  3,
  5,
  10,
  50,
  100,
  1000,
  1_000_000,
  -1,
  -0.5,
  0.5,
  2 ** 31,
  2 ** 53,
  Number.MAX_SAFE_INTEGER + 2,
  1e21,
  1e308,
  -1e308,
  5e-324,
];

/** A JSON value of another type than the schema asks for. */
export const WRONG_TYPES: readonly unknown[] = [
  0,
  -1,
  1e308,
  'FUZZ',
  '',
  true,
  false,
  null,
  [],
  {},
  [[]],
  [null],
  { $ne: 1 },
  JSON.parse('{"__proto__":{"polluted":"FUZZ"}}'),
  ['a\u0000'],
  { 'a\u0000': 'b' },
];

/** One of WRONG_TYPES, as a fresh copy (the list's objects are shared; a body must never modify them). */
export function wrongType(rng: Prng): unknown {
  const v = rng.pick(WRONG_TYPES);
  return v !== null && typeof v === 'object' ? JSON.parse(JSON.stringify(v)) : v;
}

/** Percent-encoding of a string's UTF-16 code units as UTF-8 — and lone surrogates as their 3-byte form (WTF-8). */
export function wtf8(s: string): Buffer {
  const out: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        out.push(...Buffer.from(s.slice(i, i + 2), 'utf8'));
        i++;
        continue;
      }
    }
    if (c < 0x80) out.push(c);
    else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 0x3f));
    else out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f));
  }
  return Buffer.from(out);
}

const UNRESERVED = /[A-Za-z0-9\-._~]/;

/** Every byte but the unreserved ones percent-encoded (what encodeURIComponent does, but total). */
export function pctEncode(s: string): string {
  let out = '';
  for (const b of wtf8(s)) {
    const ch = String.fromCharCode(b);
    out += b < 0x80 && UNRESERVED.test(ch) ? ch : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/**
 * A path segment as a careless or hostile client sends it: `component` percent-encodes everything; `raw` leaves `%`,
 * `/`, `.` and bytes above 0x7f as they are (only what would break the request line itself is encoded); `double`
 * encodes twice.
 */
export function encodeSegment(s: string, style: 'component' | 'raw' | 'double'): string {
  if (style === 'component') return pctEncode(s);
  if (style === 'double') return pctEncode(pctEncode(s));
  let out = '';
  for (const b of wtf8(s)) {
    out +=
      b <= 0x20 || b === 0x7f || b === 0x3f || b === 0x23 ? `%${b.toString(16).toUpperCase().padStart(2, '0')}` : String.fromCharCode(b);
  }
  return out; // a latin1 string: one character per byte
}

/** A header value the request line can carry: bytes as latin1, CR and LF removed (those belong to the raw phase). */
export function headerSafe(s: string): string {
  return wtf8(s)
    .toString('latin1')
    .replace(/[\r\n]/g, ' ');
}

export function hostile(rng: Prng): string {
  return rng.pick(HOSTILE_STRINGS);
}

/** A page token: a real-looking one (base64url of a JSON array) with hostile content, or garbage. */
export function pageToken(rng: Prng): string {
  return rng.weighted<() => string>([
    [3, () => Buffer.from(JSON.stringify([hostile(rng), hostile(rng)])).toString('base64url')],
    [2, () => Buffer.from(JSON.stringify([rng.pick(FUZZ_NAMES), rng.pick(FUZZ_NAMES)])).toString('base64url')],
    [1, () => Buffer.from(JSON.stringify({ a: hostile(rng) })).toString('base64url')],
    [1, () => Buffer.from(hostile(rng)).toString('base64')],
    [1, () => hostile(rng)],
    [1, () => 'WyJhXHUwMDAwIiwiYiJd'],
  ])();
}

// ---------------------------------------------------------------------------------------------------------------
// JSON bodies from the OpenAPI schemas
// ---------------------------------------------------------------------------------------------------------------

type Schema = Record<string, any>;

export interface BodyContext {
  /** The parts of the object the path addresses (for a body `id` that agrees, or not, with the path). */
  idParts: string[];
  /** API keys the fuzzer knows (for `identity.api_key`). */
  keys: string[];
  /** Paths for `location`: relative ones, escapes, another database's folders. */
  locations: string[];
}

/** Values that make sense for a property of this name (so requests get past validation into the engine). */
function hinted(rng: Prng, prop: string, ctx: BodyContext, gen: () => unknown): unknown {
  switch (prop) {
    case 'id':
      return rng.weighted<() => unknown>([
        [6, () => ctx.idParts],
        [1, () => [rng.pick(FUZZ_NAMES)]],
        [1, () => [hostile(rng)]],
        [1, () => []],
      ])();
    case 'identity':
      return rng.chance(0.7) ? { api_key: rng.chance(0.8) ? rng.pick(ctx.keys) : hostile(rng) } : { auth_token: hostile(rng) };
    case 'context':
      return { [`header.${rng.pick(['x-api-key', 'x-service-database', 'x-fuzz'])}`]: rng.chance(0.5) ? rng.pick(ctx.keys) : hostile(rng) };
    case 'mode':
      return rng.chance(0.8) ? rng.pick(MODES) : hostile(rng);
    case 'behavior':
      return rng.pick(['Restrict', 'Cascade', 'cascade', 'restrict', 'bogus', '']);
    case 'properties':
      return rng.weighted<() => unknown>([
        [4, () => ({ owner: 'fz_owner', [rng.pick(['k', 'plan', 'FUZZ'])]: rng.chance(0.5) ? hostile(rng) : 'v' })],
        [1, () => ({ [hostile(rng)]: 'v' })],
        [1, () => Object.fromEntries(Array.from({ length: rng.pick([100, 3000]) }, (_, i) => [`fz_k${i}`, 'v']))],
        [1, () => ({ p: 'a\u0000b' })],
        [1, () => ({ created_at: 'FUZZ' })],
      ])();
    case 'location':
      return rng.pick(ctx.locations);
    case 'predicate':
    case 'filter':
      return rng.chance(0.9) ? rng.pick(FILTERS) : hostile(rng);
    case 'updates':
      return Array.from({ length: rng.int(1, 2) }, () => [
        rng.chance(0.8) ? rng.pick(COLUMNS) : hostile(rng),
        rng.chance(0.8) ? rng.pick(EXPRESSIONS) : hostile(rng),
      ]);
    case 'new_table_name':
      return rng.chance(0.7) ? rng.pick(FUZZ_NAMES) : hostile(rng);
    case 'new_namespace_id':
    case 'new_namespace':
      return rng.pick([[], ['ns1'], ['fz_n1'], [rng.pick(FUZZ_NAMES)], [hostile(rng)], ['ns1', 'sub']]);
    case 'column':
    case 'vector_column':
    case 'path':
      return rng.chance(0.85) ? rng.pick(COLUMNS) : hostile(rng);
    case 'columns':
      return rng.weighted<() => unknown>([
        [3, () => Array.from({ length: rng.int(1, 3) }, () => rng.pick(COLUMNS))],
        [1, () => ({ column_names: [rng.pick(COLUMNS)] })],
        [1, () => ({ fz_alias: rng.pick(EXPRESSIONS) })],
        [1, () => [hostile(rng)]],
      ])();
    case 'index_type':
      return rng.pick(INDEX_TYPES);
    case 'metric_type':
    case 'distance_type':
      return rng.pick(DISTANCES);
    case 'vector':
      return rng.weighted<() => unknown>([
        [4, () => [1, 2, 3, 4]],
        [2, () => [1, 2, 3]],
        [1, () => []],
        [1, () => Array.from({ length: 5000 }, (_, i) => i)],
        [
          1,
          () => [
            [1, 2, 3, 4],
            [4, 3, 2, 1],
          ],
        ],
        [1, () => ({ single_vector: [1, 2, 3, 4] })],
        [1, () => ({ multi_vector: [[1, 2, 3, 4]] })],
        [1, () => [1e308, -1e308, 0, 5e-324]],
        [1, () => ['a', null, {}, []]],
      ])();
    case 'k':
    case 'num_partitions':
    case 'num_sub_vectors':
    case 'num_bits':
    case 'sample_rate':
    case 'max_iterations':
    case 'm':
    case 'ef_construction':
    case 'nprobes':
    case 'minimum_nprobes':
    case 'maximum_nprobes':
    case 'ef':
    case 'refine_factor':
    case 'offset':
    case 'max_token_length':
    case 'ngram_min_length':
    case 'ngram_max_length':
    case 'version':
    case 'limit':
    case 'window_ms':
      return rng.pick(NUMBERS);
    case 'new_columns':
      return Array.from({ length: rng.int(1, 2) }, () => ({
        name: rng.chance(0.7) ? rng.pick(FUZZ_NAMES) : hostile(rng),
        expression: rng.chance(0.8) ? rng.pick(EXPRESSIONS) : hostile(rng),
      }));
    case 'alterations':
      return [
        {
          path: rng.pick(COLUMNS),
          ...(rng.chance(0.5) ? { rename: rng.chance(0.6) ? rng.pick(FUZZ_NAMES) : hostile(rng) } : {}),
          ...(rng.chance(0.3) ? { nullable: rng.chance(0.5) } : {}),
          ...(rng.chance(0.3) ? { data_type: { type: rng.pick(['int64', 'float64', 'string', 'bogus', hostile(rng)]) } } : {}),
        },
      ];
    case 'full_text_query':
      return rng.pick<unknown>([
        { query: 'apple', columns: ['text'] },
        { string_query: { query: 'apple', columns: ['text'] } },
        { structured_query: { match: { terms: 'red apple', column: 'text' } } },
        { structured_query: { boolean: { must: [{ match: { terms: 'apple', column: 'text' } }] } } },
        { query: hostile(rng) },
        { structured_query: { phrase: { terms: '${jndi:x}', column: 'nonexistent' } } },
      ]);
    case 'query':
      return { vector: [1, 2, 3, 4], k: rng.pick(NUMBERS), filter: rng.pick(FILTERS) };
    case 'name':
      return rng.chance(0.7) ? rng.pick(FUZZ_NAMES) : hostile(rng);
    case 'role':
      return rng.pick(['read', 'write', 'admin', 'owner', 'ADMIN', '', hostile(rng)]);
    case 'description':
      return rng.chance(0.7) ? `fz_${hostile(rng)}` : 'FUZZ'.repeat(200);
    case 'expires_at':
      return rng.pick([
        '2099-01-01T00:00:00Z',
        '1970-01-01T00:00:00Z',
        '2000-02-30T00:00:00Z',
        '+275760-09-13T00:00:00.000Z',
        'tomorrow',
        hostile(rng),
      ]);
    case 'rate_limit':
      return rng.pick<unknown>([null, { limit: rng.pick(NUMBERS), window_ms: rng.pick(NUMBERS) }, { limit: 'x' }]);
    case 'branch':
      return rng.chance(0.5) ? 'main' : hostile(rng);
    case 'custom_stop_words':
      return [hostile(rng)];
    case 'language':
    case 'base_tokenizer':
      return rng.pick(['English', 'simple', 'whitespace', 'ngram', 'Klingon', hostile(rng)]);
    default:
      return gen();
  }
}

export class SchemaFuzzer {
  constructor(private readonly components: Record<string, Schema>) {}

  private resolve(s: Schema | undefined): Schema {
    let cur = s ?? {};
    for (let i = 0; i < 10 && typeof cur.$ref === 'string'; i++) cur = this.components[cur.$ref.split('/').pop()!] ?? {};
    return cur;
  }

  /** A value that (mostly) satisfies `schema`, with property values chosen for their names. */
  generate(rng: Prng, schema: Schema | undefined, ctx: BodyContext, depth = 0): unknown {
    const s = this.resolve(schema);
    if (depth > 6) return null;
    const alternatives = s.anyOf ?? s.oneOf;
    if (Array.isArray(alternatives)) {
      const nonNull = alternatives.filter((a: Schema) => this.resolve(a).type !== 'null');
      return this.generate(rng, rng.chance(0.9) && nonNull.length ? rng.pick(nonNull) : rng.pick(alternatives), ctx, depth + 1);
    }
    if (Array.isArray(s.enum)) return rng.chance(0.85) ? rng.pick(s.enum) : hostile(rng);
    let type = s.type;
    if (Array.isArray(type)) {
      const nonNull = type.filter((t: string) => t !== 'null');
      type = rng.chance(0.9) && nonNull.length ? rng.pick(nonNull) : rng.pick(type);
    }
    switch (type) {
      case 'object': {
        const out: Record<string, unknown> = {};
        const required: string[] = s.required ?? [];
        for (const [prop, sub] of Object.entries<Schema>(s.properties ?? {})) {
          if (!required.includes(prop) && !rng.chance(0.45)) continue;
          out[prop] = hinted(rng, prop, ctx, () => this.generate(rng, sub, ctx, depth + 1));
        }
        if (!s.properties && s.additionalProperties && rng.chance(0.7)) {
          out[rng.chance(0.7) ? 'fz_key' : hostile(rng)] = this.generate(
            rng,
            s.additionalProperties === true ? {} : s.additionalProperties,
            ctx,
            depth + 1,
          );
        }
        return out;
      }
      case 'array': {
        const n = rng.int(s.minItems ?? 0, Math.max(s.minItems ?? 0, 3));
        return Array.from({ length: n }, () => this.generate(rng, s.items, ctx, depth + 1));
      }
      case 'string':
        return rng.chance(0.5) ? rng.pick(FUZZ_NAMES) : hostile(rng);
      case 'integer':
        return rng.chance(0.8) ? rng.pick([0, 1, 2, 3, 10, 100]) : rng.pick(NUMBERS);
      case 'number':
        return rng.pick(NUMBERS);
      case 'boolean':
        return rng.chance(0.5);
      case 'null':
        return null;
      default:
        return rng.chance(0.5) ? {} : wrongType(rng);
    }
  }

  /**
   * A JSON body text for `schema`: usually valid-ish, often with one field mutated (wrong type, missing required,
   * deeply nested, huge number, prototype keys), sometimes not JSON at all.
   */
  body(rng: Prng, schema: Schema | undefined, ctx: BodyContext): { text: Buffer; note: string } {
    const kind = rng.weighted<string>([
      [50, 'valid'],
      [25, 'mutated'],
      [10, 'not-json'],
      [5, 'scalar'],
      [5, 'deep'],
      [3, 'big-number'],
      [2, 'encoding'],
    ]);
    // A copy: nothing generated may share objects with the pools above (a mutation would change later requests).
    const value = JSON.parse(JSON.stringify(this.generate(rng, schema, ctx)) ?? 'null');
    const obj: Record<string, unknown> =
      value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
    const json = (v: unknown) => Buffer.from(JSON.stringify(v) ?? 'null', 'utf8');
    switch (kind) {
      case 'valid':
        return { text: json(obj), note: 'valid' };
      case 'mutated': {
        const props = Object.keys(this.resolve(schema).properties ?? {});
        const keys = Object.keys(obj);
        const how = rng.pick(['wrong-type', 'drop-required', 'unknown-field', 'proto', 'long-string', 'many-keys']);
        if (how === 'wrong-type' && (keys.length || props.length)) obj[rng.pick(keys.length ? keys : props)] = wrongType(rng);
        else if (how === 'drop-required' && keys.length) delete obj[rng.pick(keys)];
        else if (how === 'unknown-field') obj[rng.chance(0.5) ? 'fz_unknown' : hostile(rng)] = wrongType(rng);
        else if (how === 'proto') {
          const text = JSON.stringify(obj)
            .replace(/^\{/, '{"__proto__":{"isAdmin":true,"role":"admin"},"constructor":{"prototype":{"polluted":"FUZZ"}},')
            .replace(/,\}$/, '}');
          return { text: Buffer.from(text), note: 'mutated:proto' };
        } else if (how === 'long-string' && (keys.length || props.length))
          obj[rng.pick(keys.length ? keys : props)] = 'FUZZ'.repeat(rng.pick([1000, 60_000]));
        else if (how === 'many-keys') for (let i = 0; i < 5000; i++) obj[`fz_${i}`] = i;
        return { text: json(obj), note: `mutated:${how}` };
      }
      case 'not-json':
        return {
          text: Buffer.from(
            rng.pick([
              '{',
              '{"a":}',
              "{'id':['x']}",
              'NaN',
              '[1,2',
              '\u0000',
              '{"a":1}garbage',
              '{"a":1,}',
              '{"a":"\\u00"}',
              '{"a":"\\ud800"}',
              '{"predicate":"\\u0000"}',
              '<xml/>',
              'a=1&b=2',
              '{"a":' + '1'.repeat(400) + '}',
            ]),
            'utf8',
          ),
          note: 'not-json',
        };
      case 'scalar':
        return { text: Buffer.from(rng.pick(['null', '[]', '"FUZZ"', '123', 'true', '[{}]', '""', '{}'])), note: 'scalar' };
      case 'deep': {
        const depth = rng.pick([64, 1000, 20_000]);
        const nested = '['.repeat(depth) + ']'.repeat(depth);
        const keys = Object.keys(this.resolve(schema).properties ?? {});
        const key = keys.length ? rng.pick(keys) : 'fz_deep';
        return {
          text: Buffer.from(JSON.stringify({ ...obj, [key]: 0 }).replace(`"${key}":0`, `"${key}":${nested}`)),
          note: `deep:${depth}:${key}`,
        };
      }
      case 'big-number': {
        const keys = Object.keys(this.resolve(schema).properties ?? {});
        const key = keys.length ? rng.pick(keys) : 'fz_num';
        const lit = rng.pick([
          '1e400',
          '-1e400',
          '123456789012345678901234567890',
          '0.' + '0'.repeat(400) + '1',
          '-0',
          '1E+308',
          '9007199254740993',
        ]);
        return {
          text: Buffer.from(JSON.stringify({ ...obj, [key]: 0 }).replace(`"${key}":0`, `"${key}":${lit}`)),
          note: `big-number:${key}=${lit}`,
        };
      }
      default: {
        // The right JSON in the wrong bytes: UTF-16, a byte-order mark, invalid UTF-8.
        const how = rng.pick(['utf16', 'bom', 'bad-utf8']);
        const text = JSON.stringify(obj);
        if (how === 'utf16') return { text: Buffer.from(text, 'utf16le'), note: 'encoding:utf16' };
        if (how === 'bom') return { text: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)]), note: 'encoding:bom' };
        return {
          text: Buffer.concat([Buffer.from('{"fz":"'), Buffer.from([0xff, 0xfe, 0xc0, 0x80]), Buffer.from('"}')]),
          note: 'encoding:bad-utf8',
        };
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Arrow bodies
// ---------------------------------------------------------------------------------------------------------------

function vectorColumn(rows: number, dim: number, from: number) {
  return arrow.vectorFromArray(
    Array.from({ length: rows }, (_, i) => Array.from({ length: dim }, (_, j) => from + i + j / 10)),
    new arrow.FixedSizeList(dim, new arrow.Field('item', new arrow.Float32(), true)),
  );
}

/** The rows the fuzzer's own fixture tables hold, as an Arrow IPC stream (id, name, text, 4-d vector). */
export function fixtureStream(from: number, rows: number): Buffer {
  const t = new arrow.Table({
    id: arrow.vectorFromArray(Int32Array.from({ length: rows }, (_, i) => from + i)),
    name: arrow.vectorFromArray(
      Array.from({ length: rows }, (_, i) => `n-${from + i}`),
      new arrow.Utf8(),
    ),
    text: arrow.vectorFromArray(
      Array.from({ length: rows }, (_, i) => ((from + i) % 2 ? 'red apple' : 'green pear')),
      new arrow.Utf8(),
    ),
    vector: vectorColumn(rows, 4, from),
  });
  return Buffer.from(arrow.tableToIPC(t, 'stream'));
}

/** Valid streams of several shapes, made once: the seeds the Arrow mutations start from. */
export function baseArrowStreams(): Buffer[] {
  const oneRow = new arrow.Table({
    id: arrow.vectorFromArray(Int32Array.from([1])),
    name: arrow.vectorFromArray(['fz_row'], new arrow.Utf8()),
    writer: arrow.vectorFromArray(Int32Array.from([7])),
    vector: vectorColumn(1, 4, 0),
  });
  const otherShape = new arrow.Table({
    id: arrow.vectorFromArray(Float64Array.from([1.5, 2.5])),
    fz_c: arrow.vectorFromArray([true, false], new arrow.Bool()),
  });
  const schemaOnly = new arrow.Table(
    new arrow.Schema([new arrow.Field('id', new arrow.Int32(), true), new arrow.Field('name', new arrow.Utf8(), true)]),
  );
  return [
    fixtureStream(1000, 3),
    fixtureStream(2000, 20),
    Buffer.from(arrow.tableToIPC(oneRow, 'stream')),
    Buffer.from(arrow.tableToIPC(otherShape, 'stream')),
    Buffer.from(arrow.tableToIPC(schemaOnly, 'stream')),
  ];
}

/** An Arrow body: a valid stream, or one with bytes flipped (in its schema message more often than not), cut, padded or random. */
export function arrowBody(rng: Prng, bases: Buffer[]): { body: Buffer; note: string } {
  const base = rng.pick(bases);
  const kind = rng.weighted<string>([
    [25, 'valid'],
    [45, 'flip'],
    [10, 'truncate'],
    [5, 'random'],
    [4, 'empty'],
    [4, 'length-prefix'],
    [4, 'concat'],
    [4, 'append-garbage'],
    [4, 'file-format'],
  ]);
  switch (kind) {
    case 'valid':
      return { body: base, note: 'arrow:valid' };
    case 'flip': {
      const b = Buffer.from(base);
      const n = rng.pick([1, 2, 2, 3, 4]);
      const where: number[] = [];
      // Mostly inside the schema message's metadata (after the 8-byte prefix): its flatbuffer offsets, vector
      // lengths and field counts are what a decoder trusts.
      const metaEnd = Math.min(b.length, 8 + b.readUInt32LE(4));
      const [from, to] = rng.chance(0.7) ? [8, metaEnd - 1] : [0, b.length - 1];
      for (let i = 0; i < n; i++) {
        const at = rng.int(from, to);
        b[at] = rng.pick([0x00, 0xff, 0x7f, 0x80, rng.int(0, 255), b[at] ^ (1 << rng.int(0, 7))]);
        where.push(at);
      }
      return { body: b, note: `arrow:flip@${where.join(',')}` };
    }
    case 'truncate': {
      const at = rng.int(1, base.length - 1);
      return { body: base.subarray(0, at), note: `arrow:truncate@${at}` };
    }
    case 'random':
      return { body: rng.bytes(rng.int(1, 800)), note: 'arrow:random' };
    case 'empty':
      return { body: Buffer.alloc(0), note: 'arrow:empty' };
    case 'length-prefix': {
      // The continuation marker is followed by the metadata length: claim far more than is there.
      const b = Buffer.from(base);
      const len = rng.pick([0x7fffffff, 0xffffffff, 0x10000000, b.length + 1, 0]);
      b.writeUInt32LE(len >>> 0, 4);
      return { body: b, note: `arrow:metadata-length=${len}` };
    }
    case 'concat':
      return { body: Buffer.concat([base, rng.pick(bases)]), note: 'arrow:two-streams' };
    case 'append-garbage':
      return { body: Buffer.concat([base, rng.bytes(rng.int(1, 64))]), note: 'arrow:garbage-after' };
    default: {
      const t = arrow.tableFromIPC(bases[0]);
      return { body: Buffer.from(arrow.tableToIPC(t, 'file')), note: 'arrow:file-format' };
    }
  }
}
