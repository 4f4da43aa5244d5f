import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, it } from 'node:test';
import * as lancedb from '@lancedb/lancedb';
import { ADMIN_KEY, Api, CATALOG_KINDS, createPgDatabase, eventually, forEachCatalog, operator } from './helpers/gateway';
import {
  arrowBody,
  BodyContext,
  baseArrowStreams,
  COLUMNS,
  encodeSegment,
  FILTERS,
  fixtureStream,
  FUZZ_NAMES,
  headerSafe,
  hostile,
  MARKERS,
  NUMBERS,
  pageToken,
  pctEncode,
  SchemaFuzzer,
} from './helpers/fuzz-inputs';
import { Prng } from './helpers/prng';
import { RawExchange, rawExchange, RawResponse, RawStep } from './helpers/raw-http';
import { SupervisedGateway } from './helpers/supervised-gateway';

/**
 * Seeded, bounded fuzzing of the whole HTTP surface, as a hostile client would (issue 9): every route template of
 * the gateway's own OpenAPI document (so a new route is fuzzed without touching this file), with hostile path ids,
 * schema-shaped JSON bodies with mutated fields, crafted Arrow streams, several credentials; then malformed HTTP on
 * raw sockets. It asserts what docs/rest-contract.md §7 and docs/hostile-input.md promise for any input:
 *  - no 5xx (the official clients retry those, multiplying the load), and the gateway process never dies;
 *  - no hang and no dropped connection (a per-request liveness bound, not a speed test);
 *  - every non-2xx answer with a body is the problem body (type, title, status, detail, instance, integer code);
 *  - answers to HEAD carry no body;
 *  - afterwards /healthz is 200 and an honest tenant's data, written before with the official client, is intact and
 *    shows nothing of the fuzzer;
 *  - then the catalog routes are fuzzed again with keys whose grants narrow them (docs/access-control.md "Grants":
 *    select on one namespace, insert on one table, everything in a sandbox namespace) in a database of their own:
 *    no answer shows a name or a row outside the grants of the key that asked (unless its request named it), and
 *    nothing outside the grants changes (FUZZ_SCOPED_COUNT requests, a quarter of a catalog's share by default).
 *
 * FUZZ_SEED (default below) and FUZZ_COUNT (requests per run, split over the catalogs in TEST_CATALOGS) reproduce or
 * widen a run: request #i depends only on the seed and i, and the HTTP phase sends one request at a time, so the
 * same seed and TEST_CATALOGS replay the same run (raw-socket case #i likewise; those run four at a time, each on
 * its own connection). FUZZ_HANG_MS is the per-request liveness bound. A failure prints the seed, the grouped
 * causes (with the gateway's logged error for each 500) and the first offenders in full; a request that killed the
 * process is printed with its body in base64, ready to become a fixture.
 */
const SEED = process.env.FUZZ_SEED ?? 'issue-9';
const TOTAL = positiveInt(process.env.FUZZ_COUNT, 5000);
const HANG_MS = positiveInt(process.env.FUZZ_HANG_MS, 30_000);
const PER_CATALOG = Math.ceil(TOTAL / Math.max(1, CATALOG_KINDS.length));
/** About a tenth of each run goes to malformed HTTP on raw sockets. */
const RAW_COUNT = Math.max(1, Math.round(PER_CATALOG / 10));
const HTTP_COUNT = Math.max(1, PER_CATALOG - RAW_COUNT);
/** Each printed list of offenders stops here; the grouping above it counts them all. */
const SHOW = 20;

function positiveInt(v: string | undefined, def: number): number {
  const n = Number(v);
  return v !== undefined && Number.isInteger(n) && n > 0 ? n : def;
}

// Tenants: the fuzzer works in FUZZED with its admin and read keys; NEIGHBOUR only lends its key (a credential of
// another database); HONEST is the workload nobody but its owner may reach, checked at the end.
const FUZZED = 'fuzzed';
const NEIGHBOUR = 'neighbour';
const HONEST = 'honest';
/** A database the operator may delete or reconfigure during the run (the others are off limits for that). */
const SCRATCH = 'fz_scratch';
const PROTECTED = new Set([FUZZED, NEIGHBOUR, HONEST]);
/** The scoped run's database: keys with grants (docs/access-control.md "Grants") fuzz it after the main run. */
const SCOPED = 'scoped';
/** Requests of the scoped run (per catalog): a quarter of the main run's by default. */
const SCOPED_COUNT = positiveInt(process.env.FUZZ_SCOPED_COUNT, Math.max(1, Math.ceil(PER_CATALOG / 4)));

/**
 * The scoped run's objects. Names are distinctive (`sp_`, rows `spx_`) so that one appearing where a key's grants
 * do not reach is a leak, not a coincidence. `sp_sandbox` is the only place any of its keys may create or drop.
 */
const SCOPED_NAMESPACES: readonly string[][] = [
  ['sp_prod'],
  ['sp_prod', 'sp_catalog'],
  ['sp_prod', 'sp_secret'],
  ['sp_raw'],
  ['sp_sandbox'],
];
const SCOPED_TABLES: readonly { id: string[]; rows: number }[] = [
  { id: ['sp_prod', 'sp_catalog', 'sp_items'], rows: 20 },
  { id: ['sp_prod', 'sp_catalog', 'sp_prices'], rows: 5 },
  { id: ['sp_prod', 'sp_secret', 'sp_salaries'], rows: 7 },
  { id: ['sp_raw', 'sp_events'], rows: 10 },
  { id: ['sp_raw', 'sp_audit_log'], rows: 3 },
  { id: ['sp_sandbox', 'sp_scratch'], rows: 4 },
  { id: ['sp_root'], rows: 6 },
];
/** Every row of a table carries its marker (its `name` column): an answer showing it has read the table. */
const rowMarker = (id: readonly string[]) => `spx_${id[id.length - 1]}_row`;
/** The scoped keys' grants, and what each must never see (names and row markers) unless its request said them. */
/** Every name of the scoped run's namespaces and tables. */
const SCOPED_NAMES = [...new Set([...SCOPED_NAMESPACES.flat(), ...SCOPED_TABLES.flatMap((t) => t.id)])];
/** The names a key may see; every other one it must not. */
const unseenBut = (...seen: string[]) => SCOPED_NAMES.filter((n) => !seen.includes(n));
const SCOPED_GRANTS: Record<string, { role: string; grants: unknown[]; unseen: string[] }> = {
  query: {
    role: 'read',
    grants: [{ privileges: ['select'], on: { namespace: ['sp_prod', 'sp_catalog'] } }],
    unseen: unseenBut('sp_prod', 'sp_catalog', 'sp_items', 'sp_prices'),
  },
  ingest: {
    role: 'write',
    grants: [{ privileges: ['insert'], on: { table: ['sp_raw', 'sp_events'] } }],
    unseen: unseenBut('sp_raw', 'sp_events'),
  },
  sandbox: {
    role: 'write',
    grants: [{ privileges: ['describe', 'select', 'insert', 'modify', 'create', 'manage'], on: { namespace: ['sp_sandbox'] } }],
    unseen: unseenBut('sp_sandbox', 'sp_scratch'),
  },
};
for (const g of Object.values(SCOPED_GRANTS))
  g.unseen.push(...SCOPED_TABLES.filter((t) => g.unseen.includes(t.id[t.id.length - 1])).map((t) => rowMarker(t.id)));
// Insert alone reads nothing: not even the rows of the table it may add to.
SCOPED_GRANTS.ingest.unseen.push(rowMarker(['sp_raw', 'sp_events']));
// Ids the scoped run addresses: inside and outside each key's grants, and missing ones (`fz_` names).
const SCOPED_TABLE_IDS: readonly string[][] = [
  ...SCOPED_TABLES.map((t) => t.id),
  ['sp_prod', 'sp_catalog', 'sp_items'],
  ['sp_raw', 'sp_events'],
  ['sp_sandbox', 'sp_scratch'],
  ['sp_sandbox', 'fz_new'],
  ['sp_sandbox', 'fz_sub', 'fz_t'],
  ['sp_prod', 'sp_catalog', 'fz_nosuch'],
  ['sp_prod', 'sp_secret', 'fz_nosuch'],
  ['fz_gone', 'x'],
];
const SCOPED_NAMESPACE_IDS: readonly string[][] = [
  ...SCOPED_NAMESPACES,
  [],
  [],
  ['sp_prod', 'sp_catalog'],
  ['sp_sandbox', 'fz_sub'],
  ['fz_gone'],
];
/** What the scoped keys may change: the events table (rows added) and everything in the sandbox. */
const inSandbox = (name: string) => /^sp_sandbox(\$|$)/.test(name);

interface Operation {
  method: string;
  template: string;
  queryParams: string[];
  /** 'json' (with the schema), 'arrow', or undefined (no body documented). */
  body?: 'json' | 'arrow';
  schema?: Record<string, unknown>;
}

interface FuzzRequest {
  phase: 'http' | 'raw' | 'setup' | 'scoped';
  index: number;
  method: string;
  template: string;
  /** The request target as sent (latin1: one character per byte). */
  target: string;
  headers: [string, string][];
  body?: Buffer;
  /** How the body was made (valid, mutated:…, arrow:flip@…). */
  note: string;
  credential: string;
}

interface Offender {
  kind: string;
  phase: string;
  index: number;
  method: string;
  template: string;
  target: string;
  credential: string;
  /** The request's headers other than the credential (which is named by `credential`). */
  headers: string;
  note: string;
  body: string;
  status?: number;
  answer: string;
  /** What grouping goes by (the error code or detail, without ids). */
  cause: string;
  /** The request id of a 500 (to find its logged cause). */
  instance?: string;
}

/** What an offender record says about the request. */
interface ReqInfo {
  phase: string;
  index: number;
  method: string;
  template: string;
  target: string;
  credential: string;
  note: string;
  headers?: [string, string][];
  body?: Buffer | string;
}

const snippet = (b: Buffer | string | undefined, n = 240) => {
  if (b === undefined) return '';
  const s = Buffer.isBuffer(b) ? b.toString('latin1') : b;
  return JSON.stringify(s.length > n ? `${s.slice(0, n)}… (${s.length} bytes)` : s);
};

/** The problem body of docs/rest-contract.md §7 plus the integer `code`: what is wrong with `r`, or undefined. */
function problemBodyFault(r: RawResponse): string | undefined {
  if (r.status < 300 || r.body.length === 0) return undefined;
  let body: any;
  try {
    body = JSON.parse(r.body.toString('utf8'));
  } catch {
    return 'not JSON';
  }
  const missing: string[] = [];
  for (const f of ['type', 'title', 'detail', 'instance']) if (typeof body?.[f] !== 'string') missing.push(f);
  if (body?.status !== r.status) missing.push(`status (${JSON.stringify(body?.status)} ≠ ${r.status})`);
  if (!Number.isInteger(body?.code)) missing.push(`integer code (${JSON.stringify(body?.code)})`);
  return missing.length ? `problem body lacks ${missing.join(', ')}` : undefined;
}

/** The operations of the OpenAPI document, with what their bodies and query parameters look like. */
function operationsOf(doc: any): Operation[] {
  const ops: Operation[] = [];
  for (const [template, item] of Object.entries<any>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const content = op.requestBody?.content ?? {};
      const body = content['application/vnd.apache.arrow.stream'] ? 'arrow' : content['application/json'] ? 'json' : undefined;
      ops.push({
        method: method.toUpperCase(),
        template,
        queryParams: (op.parameters ?? []).filter((p: any) => p.in === 'query').map((p: any) => p.name),
        body,
        schema: content['application/json']?.schema,
      });
    }
  }
  return ops;
}

const TABLE_IDS: readonly string[][] = [
  ['ns1', 't1'],
  ['ns1', 't1'],
  ['ns1', 't1'],
  ['t0'],
  ['t0'],
  ['ns1', 'fz_t1'],
  ['fz_t2'],
  ['ns1', 'sub', 'fz_t1'],
  ['fz_gone', 'x'],
  ['ns1'],
];
const NAMESPACE_IDS: readonly string[][] = [
  ['ns1'],
  ['ns1'],
  ['ns1', 'sub'],
  [],
  [],
  ['fz_n1'],
  ['fz_n1', 'fz_n2'],
  ['ns1', 't1'],
  ['fz_gone'],
];
const OTHER_METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'];
const JSON_TYPES = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=fz',
  'application/json; charset=utf-16',
  'application/vnd.apache.arrow.stream',
  'application/octet-stream',
  'application/JSON',
  'application/json, text/plain',
  'FUZZ/\u00ff',
];
const ARROW_TYPES = [
  'application/octet-stream',
  'application/json',
  'text/plain',
  'application/vnd.apache.arrow.file',
  'application/vnd.apache.arrow.stream; charset=FUZZ',
];

interface Keys {
  admin: string;
  read: string;
  foreign: string;
}

/**
 * Who the request maker works as, and on what: the main run (the admin, read, neighbour and no keys on FUZZED), or
 * the scoped run (keys with grants on SCOPED, catalog routes only).
 */
interface Profile {
  /** Names the random stream: request #i of a profile depends only on the seed, the label and i. */
  label: string;
  database: string;
  tableIds: readonly string[][];
  namespaceIds: readonly string[][];
  /** The credentials of a scoped run, by name (each request picks one); absent: the main run's mix. */
  scopedKeys?: Record<string, string>;
}

class RequestMaker {
  private readonly schemas: SchemaFuzzer;
  private readonly arrowBases = baseArrowStreams();
  /** The operations, those with an Arrow body three times: untrusted binary input is where a crash hides. */
  private readonly weightedOps: Operation[];

  constructor(
    private readonly ops: Operation[],
    components: Record<string, any>,
    private readonly keys: Keys,
    private readonly locations: string[],
    private readonly profile: Profile = { label: 'http', database: FUZZED, tableIds: TABLE_IDS, namespaceIds: NAMESPACE_IDS },
  ) {
    this.schemas = new SchemaFuzzer(components);
    // A scoped run fuzzes the catalog routes (the operator routes refuse its keys before anything else).
    const fuzzed = profile.scopedKeys ? ops.filter((op) => op.template.startsWith('/v1/')) : ops;
    this.weightedOps = fuzzed.flatMap((op) => (op.body === 'arrow' ? [op, op, op] : [op]));
  }

  /** Request #index of the HTTP phase: a function of the seed, the profile and the index only. */
  make(index: number): FuzzRequest {
    const rng = new Prng(SEED, `${this.profile.label}/${index}`);
    const scoped = this.profile.scopedKeys;
    const op = rng.pick(this.weightedOps);
    const method = rng.weighted<() => string>([
      [78, () => op.method],
      [12, () => rng.pick(OTHER_METHODS)],
      [10, () => 'HEAD'],
    ])();
    const isAdmin = op.template.startsWith('/admin/');
    // Arrow bodies are decoded only after authentication: most of them carry a credential that gets them there.
    const toDecoder = op.body === 'arrow' && method === op.method && rng.chance(0.7);

    const credential = scoped
      ? rng.pick(Object.keys(scoped))
      : toDecoder
        ? 'admin'
        : isAdmin
          ? rng.weighted<string>([
              [45, 'operator'],
              [20, 'admin'],
              [8, 'read'],
              [7, 'foreign'],
              [10, 'none'],
              [10, 'garbage'],
            ])
          : rng.weighted<string>([
              [50, 'admin'],
              [15, 'read'],
              [10, 'foreign'],
              [5, 'operator'],
              [8, 'none'],
              [7, 'garbage'],
              [5, 'bearer'],
            ]);

    // Path parameters.
    let idParts: string[] = [];
    const query: [string, string][] = [];
    let delimiter = '$';
    let target = op.template.replace(/\{([^}]+)\}/g, (_m, param: string) => {
      if (param === 'id' && op.template.startsWith('/v1/')) {
        if (op.template.startsWith('/v1/transaction/'))
          return rng.chance(0.6) ? rng.bytes(16).toString('hex') : encodeSegment(hostile(rng), 'component');
        idParts = [...rng.pick(op.template.startsWith('/v1/namespace/') ? this.profile.namespaceIds : this.profile.tableIds)];
        // The scoped run mostly names real objects: what it is about is the grant check on them.
        const style = rng.weighted<string>([
          [scoped ? 85 : 65, 'plain'],
          [10, 'delimiter'],
          [scoped ? 5 : 25, 'hostile'],
        ]);
        if (style === 'delimiter') {
          delimiter = rng.pick(['.', '::', '%']);
          query.push(['delimiter', pctEncode(delimiter)]);
        }
        if (style === 'hostile') {
          const bad = hostile(rng);
          if (idParts.length === 0) idParts = [bad];
          else idParts[rng.int(0, idParts.length - 1)] = bad;
          return encodeSegment(idParts.join(delimiter), rng.pick(['component', 'component', 'raw', 'double'] as const));
        }
        if (idParts.length === 0) return rng.chance(0.8) ? '%24' : pctEncode(delimiter);
        const joined = idParts.join(delimiter);
        return rng.chance(0.6) ? pctEncode(joined) : encodeSegment(joined, 'raw');
      }
      if (param === 'name' && isAdmin) {
        let name = rng.chance(0.8)
          ? rng.pick([FUZZED, FUZZED, FUZZED, NEIGHBOUR, HONEST, SCRATCH, 'fz_nosuch', rng.pick(FUZZ_NAMES)])
          : hostile(rng);
        // The operator could legitimately delete or reconfigure these; that is not what the run is about.
        if (credential === 'operator' && method !== 'GET' && PROTECTED.has(name)) name = SCRATCH;
        return encodeSegment(name, rng.chance(0.8) ? 'component' : 'raw');
      }
      if (param === 'name')
        return encodeSegment(rng.chance(0.7) ? rng.pick(FUZZ_NAMES) : hostile(rng), rng.chance(0.8) ? 'component' : 'raw');
      if (param === 'index_name')
        return encodeSegment(
          rng.chance(0.7) ? rng.pick(['id_idx', 'text_idx', 'vector_idx', 'fz_idx']) : hostile(rng),
          rng.chance(0.8) ? 'component' : 'raw',
        );
      // An API key id: never a real one (revoking the fuzzer's own keys would end the run early).
      return encodeSegment(rng.chance(0.5) ? rng.bytes(16).toString('hex') : hostile(rng), rng.chance(0.8) ? 'component' : 'raw');
    });
    if (rng.chance(0.05)) target += '/';

    // Query parameters: the documented ones, sometimes, with values for their names; now and then extra ones.
    for (const p of op.queryParams) {
      if (p === 'delimiter' && query.some(([k]) => k === 'delimiter')) continue;
      if (!rng.chance(p === 'mode' ? 0.5 : 0.25)) continue;
      query.push([p, this.queryValue(rng, p)]);
    }
    if (rng.chance(0.05)) query.push(['fz_x', pctEncode(hostile(rng))]);
    if (rng.chance(0.03) && query.length) query.push([query[0][0], pctEncode(hostile(rng))]);
    if (rng.chance(0.02)) query.push(['fz_long', 'A'.repeat(rng.pick([5000, 20_000]))]);
    if (query.length) target += '?' + query.map(([k, v]) => `${k}=${v}`).join('&');

    // Headers.
    const headers: [string, string][] = [];
    const key = {
      operator: ADMIN_KEY,
      admin: this.keys.admin,
      read: this.keys.read,
      foreign: this.keys.foreign,
      garbage: rng.pick([`lgw_${rng.bytes(32).toString('hex')}`, 'lgw_', headerSafe(hostile(rng)), 'x'.repeat(10_000)]),
      ...scoped,
    }[credential];
    if (key !== undefined) headers.push(['x-api-key', key]);
    if (credential === 'bearer')
      headers.push([
        'authorization',
        rng.pick([
          'Bearer eyJhbGciOiJub25lIn0.eyJkYXRhYmFzZXMiOiIqIn0.',
          'Bearer FUZZ',
          'Basic Zm9vOmJhcg==',
          `Bearer ${'A'.repeat(9000)}`,
          'Bearer',
        ]),
      ]);
    if (!isAdmin || rng.chance(0.2)) {
      const db = rng.weighted<() => string | undefined>([
        [toDecoder || scoped ? 1000 : 75, () => this.profile.database],
        [7, () => NEIGHBOUR],
        [6, () => HONEST],
        [4, () => undefined],
        [5, () => headerSafe(hostile(rng))],
        [3, () => 'fz_nosuch'],
      ])();
      if (db !== undefined) headers.push([rng.chance(0.85) ? 'x-service-database' : 'x-lancedb-database', db]);
      if (rng.chance(0.05)) headers.push(['x-lancedb-database', rng.pick([HONEST, NEIGHBOUR, headerSafe(hostile(rng))])]);
      if (rng.chance(0.05)) headers.push(['x-service-database-prefix', rng.chance(0.5) ? 'fz_team' : headerSafe(hostile(rng))]);
    }
    if (rng.chance(0.05)) headers.push(['x-request-id', rng.chance(0.5) ? 'fz-req-1' : headerSafe(hostile(rng))]);
    if (rng.chance(0.04))
      headers.push(['x-request-timeout-ms', rng.pick(['0', '-1', 'abc', '99999999999', '1', headerSafe(hostile(rng))])]);
    if (rng.chance(0.03))
      headers.push(['accept', rng.pick(['application/xml', '*/*;q=FUZZ', 'application/vnd.apache.arrow.file', headerSafe(hostile(rng))])]);
    if (rng.chance(0.03)) headers.push(['content-encoding', rng.pick(['gzip', 'br', 'deflate', 'identity', 'FUZZ'])]);

    // Body.
    let body: Buffer | undefined;
    let note = 'no body';
    let contentType: string | undefined;
    const ctx: BodyContext = {
      idParts,
      keys: [this.keys.admin, this.keys.read, this.keys.foreign, ADMIN_KEY, 'lgw_FUZZ'],
      locations: this.locations,
    };
    if (method !== 'HEAD') {
      if (rng.chance(0.015) && op.body === 'json' && method === op.method) {
        // Well above BODY_LIMIT_BYTES (1 MiB): the 413 must reach the client, not an EPIPE.
        body = Buffer.from(JSON.stringify({ fz_big: 'A'.repeat(rng.pick([3, 5]) * 1024 * 1024) }));
        contentType = 'application/json';
        note = `oversized:${body.length}`;
      } else if (op.body === 'arrow' && (method === op.method || rng.chance(0.5))) {
        const a = arrowBody(rng, this.arrowBases);
        body = a.body;
        note = a.note;
        contentType = rng.weighted<() => string | undefined>([
          [75, () => 'application/vnd.apache.arrow.stream'],
          [10, () => undefined],
          [15, () => rng.pick(ARROW_TYPES)],
        ])();
      } else if (op.body === 'json' || (method !== 'GET' && rng.chance(0.3)) || rng.chance(0.05)) {
        const b = this.schemas.body(rng, op.schema, ctx);
        body = b.text;
        note = b.note;
        contentType = rng.chance(0.85) ? 'application/json' : rng.chance(0.2) ? undefined : rng.pick(JSON_TYPES);
      }
    }
    if (contentType !== undefined) headers.push(['content-type', headerSafe(contentType)]);
    return { phase: scoped ? 'scoped' : 'http', index, method, template: op.template, target, headers, body, note, credential };
  }

  private queryValue(rng: Prng, p: string): string {
    const enc = (s: string) => (rng.chance(0.85) ? pctEncode(s) : encodeSegment(s, 'raw'));
    if (rng.chance(0.2)) return enc(hostile(rng));
    switch (p) {
      case 'page_token':
        return enc(pageToken(rng));
      case 'limit':
        return enc(rng.pick(['0', '1', '2', '-1', 'abc', '1e3', '99999999999999999999', '1000000', '', '1.5']));
      case 'delimiter':
        return enc(rng.pick(['$', '.', '::', '', '\u0000']));
      case 'mode':
        return enc(rng.pick(['create', 'exist_ok', 'overwrite', 'append', 'Create', 'ExistOk', 'bogus', '']));
      case 'properties':
        return enc(rng.pick(['{"k":"v"}', '{"p":"a\\u0000b"}', '{"k":1}', '[]', 'not json', '{"__proto__":{"x":"FUZZ"}}']));
      case 'on':
        return enc(rng.pick(COLUMNS));
      case 'predicate':
      case 'when_matched_update_all_filt':
      case 'when_not_matched_by_source_delete_filt':
        return enc(rng.pick(FILTERS));
      case 'version':
        return enc(String(rng.pick([...NUMBERS, 'abc'])));
      case 'branch':
        return enc(rng.pick(['main', 'fz_branch']));
      default:
        return enc(rng.pick(['true', 'false', '1', '0', 'yes', '']));
    }
  }
}

/** The bytes of `req` on the wire: Connection: close, so the end of the answer is the end of the connection. */
function wire(req: FuzzRequest, hostPort: string, chunked = false): RawStep[] {
  let head = `${req.method} ${req.target} HTTP/1.1\r\nhost: ${hostPort}\r\nconnection: close\r\n`;
  for (const [k, v] of req.headers) head += `${k}: ${v}\r\n`;
  if (req.body !== undefined && chunked) {
    head += 'transfer-encoding: chunked\r\n\r\n';
    const parts: Buffer[] = [Buffer.from(head, 'latin1')];
    for (let at = 0; at < req.body.length; at += 4096) {
      const piece = req.body.subarray(at, at + 4096);
      parts.push(Buffer.from(`${piece.length.toString(16)}\r\n`, 'latin1'), piece, Buffer.from('\r\n'));
    }
    parts.push(Buffer.from('0\r\n\r\n'));
    return [Buffer.concat(parts)];
  }
  if (req.body !== undefined || ['POST', 'PUT', 'PATCH'].includes(req.method)) head += `content-length: ${req.body?.length ?? 0}\r\n`;
  head += '\r\n';
  return req.body ? [Buffer.from(head, 'latin1'), req.body] : [Buffer.from(head, 'latin1')];
}

// ---------------------------------------------------------------------------------------------------------------
// Raw-socket cases: malformed HTTP a client library would refuse to send
// ---------------------------------------------------------------------------------------------------------------

interface RawCase {
  name: string;
  steps: RawStep[];
  methods: string[];
  /** The client sent a complete request (or a complete malformed one): an answer or a close is due, not silence. */
  answerDue: boolean;
  halfClose?: boolean;
  closeAfterMs?: number;
}

function rawCase(index: number, hostPort: string, keys: Keys): RawCase {
  const rng = new Prng(SEED, `raw/${index}`);
  const auth = `x-api-key: ${keys.admin}\r\nx-service-database: ${FUZZED}\r\n`;
  const h = `host: ${hostPort}\r\n`;
  const route = rng.pick([
    '/v1/table',
    '/v1/namespace/%24/list',
    '/v1/table/ns1%24t1/stats',
    '/healthz',
    '/v1/table/ns1%24t1/count_rows',
    '/admin/v1/databases',
    '/metrics',
  ]);
  const postRoute = rng.pick([
    '/v1/namespace/fz_raw/create',
    '/v1/table/ns1%24t1/count_rows',
    '/v1/table/ns1%24t1/query',
    '/v1/tables/fz_raw',
    '/v1/table/ns1%24t1/describe',
  ]);
  const kind = rng.pick([
    'bad-request-line',
    'empty-lines',
    'bad-method',
    'bad-chunking',
    'cl-and-te',
    'duplicate-cl',
    'bad-cl',
    'big-headers',
    'bad-header-bytes',
    'truncated-body',
    'truncated-head',
    'slow-close',
    'pipelined',
    'no-host',
    'expect',
    'upgrade',
    'long-url',
    'head',
    'oversized-body',
    'chunked-oversized',
  ]);
  const one = (s: string, answerDue = true, methods = ['GET']): RawCase => ({ name: kind, steps: [s], methods, answerDue });
  switch (kind) {
    case 'bad-request-line':
      return one(
        rng.pick([
          'GET\r\n\r\n',
          `GET / HTTP/9.9\r\n${h}\r\n`,
          `GET ${route} HTTP/1.1 extra\r\n${h}\r\n`,
          `GET /v1/ta ble HTTP/1.1\r\n${h}\r\n`,
          `GET /v1/table/\u0000/stats HTTP/1.1\r\n${h}\r\n`,
          `GET /v1/table/\u00ff\u00fe/stats HTTP/1.1\r\n${h}${auth}\r\n`,
          `GET http://127.0.0.1/v1/table HTTP/1.1\r\n${h}${auth}\r\n`,
          `GET * HTTP/1.1\r\n${h}\r\n`,
          `GET v1/table HTTP/1.1\r\n${h}\r\n`,
          `GET /v1/table HTTP/1.1\n${h.replace('\r\n', '\n')}\n`,
          ` GET /v1/table HTTP/1.1\r\n${h}\r\n`,
          `GET /v1/table/%ff/stats HTTP/1.1\r\n${h}${auth}\r\n`,
          `GET /v1/table/%/stats HTTP/1.1\r\n${h}${auth}\r\n`,
          rng.bytes(64).toString('latin1') + '\r\n\r\n',
        ]),
      );
    case 'empty-lines':
      // Blank lines before a request line are allowed, so the server waits for one; the client then half-closes.
      return { ...one('\r\n\r\n\r\n'), halfClose: true };
    case 'bad-method':
      return one(
        rng.pick([
          `FOO ${route} HTTP/1.1\r\n${h}\r\n`,
          `get ${route} HTTP/1.1\r\n${h}\r\n`,
          `G\u0000T ${route} HTTP/1.1\r\n${h}\r\n`,
          `CONNECT 127.0.0.1:5432 HTTP/1.1\r\n${h}\r\n`,
          'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n',
          `TRACE ${route} HTTP/1.1\r\n${h}\r\n`,
          `PROPFIND ${route} HTTP/1.1\r\n${h}\r\n`,
        ]),
      );
    case 'bad-chunking': {
      // Malformed framing the server can see is wrong at once, or framing that promises more than comes (then the
      // client half-closes: the server sees the end of the stream and must answer or close, not wait).
      const [bodyPart, incomplete] = rng.pick([
        ['zz\r\n{}\r\n0\r\n\r\n', false],
        ['2\r\n{}0\r\n\r\n', false],
        ['-1\r\n{}\r\n0\r\n\r\n', false],
        ['2;\u0000\r\n{}\r\n0\r\n\r\n', false],
        ['2\n{}\n0\n\n', false],
        ['2\r\n{}\r\n', true],
        ['100\r\n{}\r\n0\r\n\r\n', true],
        ['ffffffffffffffff\r\n{}\r\n', true],
      ] as const);
      return {
        ...one(
          `POST ${postRoute} HTTP/1.1\r\n${h}${auth}content-type: application/json\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n${bodyPart}`,
          true,
          ['POST'],
        ),
        halfClose: incomplete,
      };
    }
    case 'cl-and-te':
      return one(
        `POST ${postRoute} HTTP/1.1\r\n${h}${auth}content-type: application/json\r\ncontent-length: 4\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n2\r\n{}\r\n0\r\n\r\n`,
        true,
        ['POST'],
      );
    case 'duplicate-cl':
      return one(
        `POST ${postRoute} HTTP/1.1\r\n${h}${auth}content-type: application/json\r\ncontent-length: 2\r\ncontent-length: 3\r\nconnection: close\r\n\r\n{} `,
        true,
        ['POST'],
      );
    case 'bad-cl': {
      const cl = rng.pick(['abc', '-1', '99999999999999999999', '1 2', '0x10', '+2']);
      return one(
        `POST ${postRoute} HTTP/1.1\r\n${h}${auth}content-type: application/json\r\ncontent-length: ${cl}\r\nconnection: close\r\n\r\n{}`,
        true,
        ['POST'],
      );
    }
    case 'big-headers': {
      const method = rng.chance(0.4) ? 'HEAD' : 'GET';
      const big = rng.chance(0.5)
        ? `x-fz-big: ${'A'.repeat(rng.pick([20_000, 70_000]))}\r\n`
        : Array.from({ length: rng.pick([300, 2500]) }, (_, i) => `x-fz-${i}: v\r\n`).join('');
      return one(`${method} ${route} HTTP/1.1\r\n${h}${auth}${big}connection: close\r\n\r\n`, true, [method]);
    }
    case 'bad-header-bytes': {
      const bad = rng.pick([
        'x-fz: a\u0000b\r\n',
        'x-fz: a\rb\r\n',
        'x-fz\r\n',
        ' x-fz: folded\r\n',
        'x fz: v\r\n',
        'x-fz : v\r\n',
        'x-fz: v\r\n continued\r\n',
        '\u00ff: v\r\n',
        'x-api-key: \u0000\r\n',
        'x-service-database: a\u0000b\r\n',
      ]);
      return one(`GET ${route} HTTP/1.1\r\n${h}${auth}${bad}connection: close\r\n\r\n`);
    }
    case 'truncated-body':
      // Fewer bytes than Content-Length, then the end of the stream: an answer or a close is due.
      return {
        name: kind,
        steps: [`POST ${postRoute} HTTP/1.1\r\n${h}${auth}content-type: application/json\r\ncontent-length: 1000\r\n\r\n{"mode":"Cre`],
        methods: ['POST'],
        answerDue: true,
        halfClose: true,
      };
    case 'truncated-head':
      return { name: kind, steps: [`GET ${route} HTTP/1.1\r\n${h}x-api-ke`], methods: ['GET'], answerDue: true, halfClose: true };
    case 'slow-close':
      return {
        name: kind,
        steps: ['G', { pauseMs: 50 }, 'ET /v1/', { pauseMs: 50 }, `table HTTP/1.1\r\n${h}`],
        methods: ['GET'],
        answerDue: false,
        closeAfterMs: 100,
      };
    case 'pipelined':
      return {
        name: kind,
        steps: [
          `GET /healthz HTTP/1.1\r\n${h}\r\nGET ${route} HTTP/1.1\r\n${h}${auth}\r\nGET /v1/table/%ff HTTP/1.1\r\n${h}${auth}connection: close\r\n\r\n`,
        ],
        methods: ['GET', 'GET', 'GET'],
        answerDue: true,
      };
    case 'no-host':
      return one(
        rng.pick([
          `GET ${route} HTTP/1.1\r\n${auth}connection: close\r\n\r\n`,
          `GET ${route} HTTP/1.0\r\n${auth}\r\n`,
          `GET ${route} HTTP/1.1\r\nhost: a\r\nhost: b\r\n${auth}connection: close\r\n\r\n`,
        ]),
      );
    case 'expect':
      return one(
        rng.pick([
          `POST ${postRoute} HTTP/1.1\r\n${h}${auth}content-type: application/json\r\ncontent-length: 2\r\nexpect: 100-continue\r\nconnection: close\r\n\r\n{}`,
          `POST ${postRoute} HTTP/1.1\r\n${h}${auth}content-type: application/json\r\ncontent-length: 2\r\nexpect: FUZZ\r\nconnection: close\r\n\r\n{}`,
        ]),
        true,
        ['POST'],
      );
    case 'upgrade':
      return one(
        rng.pick([
          `GET ${route} HTTP/1.1\r\n${h}connection: Upgrade, HTTP2-Settings\r\nupgrade: h2c\r\nhttp2-settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n`,
          `GET ${route} HTTP/1.1\r\n${h}connection: upgrade\r\nupgrade: websocket\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nsec-websocket-version: 13\r\n\r\n`,
        ]),
      );
    case 'long-url':
      return one(`GET /v1/table/${'A'.repeat(rng.pick([5000, 20_000, 70_000]))}/stats HTTP/1.1\r\n${h}${auth}connection: close\r\n\r\n`);
    case 'head': {
      const target = rng.pick([
        '/v1/table/%ff/stats',
        `/v1/table/${'B'.repeat(5000)}/stats`,
        '/v1/nope',
        '/v1/table/ns1%24t1/drop',
        '/healthz',
        '/metrics',
        '/v1/table',
        '/openapi.json',
        '/docs',
      ]);
      return one(`HEAD ${target} HTTP/1.1\r\n${h}${rng.chance(0.5) ? auth : ''}connection: close\r\n\r\n`, true, ['HEAD']);
    }
    case 'oversized-body': {
      const size = rng.pick([3, 6]) * 1024 * 1024;
      return {
        name: kind,
        steps: [
          `POST ${postRoute === '/v1/tables/fz_raw' ? '/v1/namespace/fz_raw/create' : postRoute} HTTP/1.1\r\n${h}${auth}content-type: application/json\r\ncontent-length: ${size + 12}\r\n\r\n`,
          Buffer.from(`{"fz_big":"${'A'.repeat(size)}"}`),
        ],
        methods: ['POST'],
        answerDue: true,
      };
    }
    default: {
      const chunk = 'A'.repeat(64 * 1024);
      const pieces: RawStep[] = [
        `POST /v1/namespace/fz_raw/create HTTP/1.1\r\n${h}${auth}content-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n`,
        `c\r\n{"fz_big":"A\r\n`,
      ];
      for (let i = 0; i < 40; i++) pieces.push(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
      pieces.push('2\r\n"}\r\n0\r\n\r\n');
      return { name: kind, steps: pieces, methods: ['POST'], answerDue: true };
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------

interface HonestSnapshot {
  rows: string;
  count: number;
  tableNames: string[];
  namespaces: string[];
  listings: Record<string, string>;
  folders: string[];
}

forEachCatalog('fuzz: hostile requests over every route', (kind) => {
  const offenders: Offender[] = [];
  const statuses = new Map<number, number>();
  let gw: SupervisedGateway;
  let pg: Awaited<ReturnType<typeof createPgDatabase>> | undefined;
  let dataDir: string;
  let keys: Keys;
  let honestKey: string;
  let honestBefore: HonestSnapshot;
  let sent = 0;
  let rawSent = 0;
  let templates = 0;
  let crashesSeen = 0;
  let stoppedEarly = '';
  let scopedAdmin = '';
  const scopedKeys: Record<string, string> = {};
  let scopedBefore: Record<string, string> = {};
  let scopedSent = 0;
  /** 2xx answers per scoped key: the run reached what the grants allow, not only refusals. */
  const scopedOk = new Map<string, number>();

  const hostPort = () => `127.0.0.1:${gw.portNumber}`;
  const api = (headers: Record<string, string> = {}) => new Api(gw.url, headers);

  function record(kind: string, req: ReqInfo, status: number | undefined, answer: string, cause = answer.slice(0, 120)): void {
    offenders.push({
      kind,
      phase: req.phase,
      index: req.index,
      method: req.method,
      template: req.template,
      target: snippet(req.target, 160),
      credential: req.credential,
      headers: snippet(
        (req.headers ?? [])
          .filter(([k]) => k !== 'x-api-key' && k !== 'authorization')
          .map(([k, v]) => `${k}: ${v}`)
          .join(' | '),
        200,
      ),
      note: req.note,
      body: snippet(req.body, req.phase === 'raw' ? 400 : 160),
      status,
      answer,
      cause,
    });
  }

  /** Checks one answer against the promises above. */
  function judge(req: ReqInfo, r: RawResponse): void {
    statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
    if (r.status >= 500) {
      record('5xx', req, r.status, snippet(r.body, 400), causeOf(r.body));
      offenders[offenders.length - 1].instance = r.headers['x-request-id'];
    }
    const fault = problemBodyFault(r);
    if (fault)
      record('problem-body', req, r.status, `${fault}: ${snippet(r.body, 300)}`, `${fault.replace(/ \(.*?\)/g, '')}: ${causeOf(r.body)}`);
    if (req.method === 'HEAD' && (r.bytesAfterHead ?? 0) > 0)
      record('head-body', req, r.status, `${r.bytesAfterHead} body bytes after the head of a HEAD answer`);
  }

  /** After a request went unanswered: did the process die, or stop answering? Then it is started again. */
  async function checkAlive(req: ReqInfo): Promise<boolean> {
    let alive = gw.alive;
    if (alive) {
      const probe = await rawExchange(
        '127.0.0.1',
        gw.portNumber,
        [`GET /healthz HTTP/1.1\r\nhost: ${hostPort()}\r\nconnection: close\r\n\r\n`],
        { timeoutMs: HANG_MS },
      );
      alive = probe.responses[0]?.status === 200;
    }
    if (alive) return true;
    // Wait for the exit to be reported (an abort takes a moment), or kill a process that no longer answers.
    for (let i = 0; i < 50 && gw.alive; i++) await new Promise((r) => setTimeout(r, 100));
    const unresponsive = gw.alive;
    await gw.restart();
    const death = gw.deaths[gw.deaths.length - 1];
    crashesSeen++;
    record(
      unresponsive ? 'unresponsive' : 'crash',
      req,
      undefined,
      (unresponsive
        ? '/healthz did not answer either: the process was killed and started again'
        : `process exited (code ${death?.code}, signal ${death?.signal}); last output:\n${death?.tail ?? ''}`) +
        (req.body !== undefined && req.body.length <= 65536
          ? `\n     the request body, base64 (a fixture for a targeted test): ${Buffer.from(req.body).toString('base64')}`
          : ''),
      unresponsive
        ? 'unresponsive'
        : `exit code ${death?.code} signal ${death?.signal}: ${/heap out of memory|FATAL ERROR[^\n]*|panicked[^\n]*/.exec(death?.tail ?? '')?.[0] ?? ''}`,
    );
    return false;
  }

  async function exchange(req: FuzzRequest, chunked: boolean): Promise<RawResponse | undefined> {
    const res = await rawExchange('127.0.0.1', gw.portNumber, wire(req, hostPort(), chunked), {
      timeoutMs: HANG_MS,
      methods: [req.method],
    });
    const r = res.responses[0];
    if (r) judge(req, r);
    if (res.errorWhileWriting || (res.error && !r)) {
      // A process that died is reported as such (with the request that killed it), not as a dropped connection.
      if (!(await checkAlive(req))) return r;
      const when = res.errorWhileWriting
        ? `while the request was being sent: the server closed without reading it${r ? ` (a ${r.status} had arrived, which most clients never read)` : ''}`
        : 'before any answer';
      record(
        'dropped',
        req,
        r?.status,
        `socket ${res.error} ${when}`,
        `socket ${res.error} ${res.errorWhileWriting ? 'while sending' : 'before any answer'}`,
      );
    } else if (!r) {
      if (!(await checkAlive(req))) return r;
      if (res.outcome === 'timeout') record('hang', req, undefined, `no answer within ${HANG_MS} ms`, 'no answer');
      else
        record(
          'dropped',
          req,
          undefined,
          `connection closed without an answer (${res.received.length} bytes: ${snippet(res.received, 120)})`,
          'closed without an answer',
        );
    }
    return r;
  }

  /** The fuzzer's own fixtures, put back when fuzzing dropped or renamed them (so later requests reach real tables). */
  async function replenish(): Promise<void> {
    try {
      await replenishOnce();
    } catch (err) {
      // The gateway did not answer a fixture request: the same liveness check as for a fuzz request.
      const req = { phase: 'setup', index: -1, method: 'POST', template: 'fixtures', target: '', credential: 'admin', note: String(err) };
      await checkAlive(req);
      await replenishOnce();
    }
  }

  async function replenishOnce(): Promise<void> {
    const a = api({ 'x-api-key': keys.admin, 'x-service-database': FUZZED });
    const check = async (what: string, p: Promise<{ status: number; text: string }>) => {
      const r = await p;
      if (r.status >= 500)
        record(
          '5xx',
          { phase: 'setup', index: -1, method: 'POST', template: what, target: what, credential: 'admin', note: 'fixture' },
          r.status,
          snippet(r.text),
        );
      return r;
    };
    await check('/v1/namespace/ns1/create', a.post('/v1/namespace/ns1/create', { mode: 'ExistOk' }));
    await check('/v1/namespace/ns1$sub/create', a.post('/v1/namespace/ns1%24sub/create', { mode: 'ExistOk' }));
    for (const [id, rows] of [
      ['ns1$t1', 50],
      ['t0', 10],
    ] as const) {
      const exists = await check(`/v1/table/${id}/exists`, a.post(`/v1/table/${encodeURIComponent(id)}/exists`, {}));
      if (exists.status === 200) continue;
      const res = await fetch(`${gw.url}/v1/table/${encodeURIComponent(id)}/create?mode=overwrite`, {
        method: 'POST',
        headers: { 'x-api-key': keys.admin, 'x-service-database': FUZZED, 'content-type': 'application/vnd.apache.arrow.stream' },
        body: fixtureStream(0, rows),
      });
      await check(`/v1/table/${id}/create`, Promise.resolve({ status: res.status, text: await res.text() }));
    }
  }

  async function honestSnapshot(): Promise<HonestSnapshot> {
    const db = await lancedb.connectNamespace('rest', { uri: gw.url, headers: { 'x-api-key': honestKey, 'x-service-database': HONEST } });
    try {
      const table = await db.openTable('people', ['hr']);
      const rows = (await table.query().toArray())
        .map((r) => ({ id: r.id, label: r.label, vector: Array.from(r.vector as Iterable<number>) }))
        .sort((x, y) => x.id - y.id);
      const own = api({ 'x-api-key': honestKey, 'x-service-database': HONEST });
      const op = operator({ url: gw.url });
      const text = async (p: Promise<{ status: number; text: string }>) => {
        const r = await p;
        return `${r.status} ${r.text.replace(/"(created_at|last_used_at)":("[^"]*"|null)/g, '')}`;
      };
      const storage = path.join(dataDir, 'tables', HONEST);
      return {
        rows: JSON.stringify(rows),
        count: await table.countRows(),
        tableNames: await db.tableNames(['hr']),
        namespaces: (await db.listNamespaces([])).namespaces,
        listings: {
          'GET /v1/table': await text(own.get('/v1/table')),
          'GET /v1/tables': await text(own.get('/v1/tables')),
          'GET /v1/namespace/$/list': await text(own.get('/v1/namespace/%24/list')),
          'GET /v1/namespace/hr/table/list': await text(own.get('/v1/namespace/hr/table/list')),
          'GET /admin/v1/databases/honest': await text(op.get(`/admin/v1/databases/${HONEST}`)),
          'GET /admin/v1/databases/honest/api-keys': await text(op.get(`/admin/v1/databases/${HONEST}/api-keys`)),
          'GET /admin/v1/databases/honest/audit': await text(op.get(`/admin/v1/databases/${HONEST}/audit?limit=1000`)),
        },
        folders: fs.existsSync(storage) ? fs.readdirSync(storage).sort() : [],
      };
    } finally {
      db.close();
    }
  }

  const scopedApi = () => api({ 'x-api-key': scopedAdmin, 'x-service-database': SCOPED });
  const idOf = (id: readonly string[]) => (id.length ? encodeURIComponent(id.join('$')) : '%24');

  /** The scoped run's database, keys and objects (the keys' grants: SCOPED_GRANTS). */
  async function scopedSetup(): Promise<void> {
    const op = operator({ url: gw.url });
    assert.equal((await op.post('/admin/v1/databases', { name: SCOPED })).status, 201);
    const key = async (body: Record<string, unknown>) => {
      const r = await op.post(`/admin/v1/databases/${SCOPED}/api-keys`, body);
      assert.equal(r.status, 201, r.text);
      return r.body.api_key as string;
    };
    scopedAdmin = await key({ role: 'admin' });
    for (const [name, g] of Object.entries(SCOPED_GRANTS)) scopedKeys[name] = await key({ role: g.role, grants: g.grants, name });
    const a = scopedApi();
    for (const ns of SCOPED_NAMESPACES) assert.equal((await a.post(`/v1/namespace/${idOf(ns)}/create`, {})).status, 200, ns.join('$'));
    for (const t of SCOPED_TABLES) {
      const res = await fetch(`${gw.url}/v1/table/${idOf(t.id)}/create`, {
        method: 'POST',
        headers: { 'x-api-key': scopedAdmin, 'x-service-database': SCOPED, 'content-type': 'application/vnd.apache.arrow.stream' },
        body: fixtureStream(0, t.rows),
      });
      assert.equal(res.status, 200, await res.text());
      const marked = await a.post(`/v1/table/${idOf(t.id)}/update`, { updates: [['name', `'${rowMarker(t.id)}'`]] });
      assert.equal(marked.status, 200, marked.text);
    }
  }

  /**
   * What the scoped keys may not change, as the database's admin key sees it: every listing (the sandbox's own
   * entries left out), every namespace's description, and each table's rows and versions (the events table's
   * rows apart: the ingest key may add to them).
   */
  async function scopedSnapshot(): Promise<Record<string, string>> {
    const a = scopedApi();
    const out: Record<string, string> = {};
    // The sandbox's own entries left out; keys sorted (a version's metadata map comes in any order).
    const withoutSandbox = (v: unknown): unknown =>
      Array.isArray(v)
        ? v.filter((x) => typeof x !== 'string' || !inSandbox(x)).map(withoutSandbox)
        : v && typeof v === 'object'
          ? Object.fromEntries(
              Object.entries(v)
                .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
                .map(([k, x]) => [k, withoutSandbox(x)]),
            )
          : v;
    const text = async (p: Promise<{ status: number; text: string; body: unknown }>) => {
      const r = await p;
      return `${r.status} ${JSON.stringify(withoutSandbox(r.body))}`;
    };
    for (const ns of [[], ...SCOPED_NAMESPACES.filter((n) => !inSandbox(n.join('$')))]) {
      out[`namespaces in ${ns.join('$')}`] = await text(a.get(`/v1/namespace/${idOf(ns)}/list?limit=1000`));
      out[`tables in ${ns.join('$')}`] = await text(a.get(`/v1/namespace/${idOf(ns)}/table/list?limit=1000`));
      if (ns.length) out[`namespace ${ns.join('$')}`] = await text(a.post(`/v1/namespace/${idOf(ns)}/describe`, {}));
    }
    const all: string[] = [];
    let token: string | undefined;
    do {
      const r = await a.get(`/v1/table?limit=1000${token ? `&page_token=${encodeURIComponent(token)}` : ''}`);
      assert.equal(r.status, 200, r.text);
      all.push(...(r.body.tables as string[]).filter((x) => !inSandbox(x)));
      token = r.body.page_token ?? undefined;
    } while (token);
    out['all tables'] = JSON.stringify(all.sort());
    for (const t of SCOPED_TABLES) {
      if (inSandbox(t.id.join('$'))) continue;
      const id = t.id.join('$');
      const count = (predicate?: string) => text(a.post(`/v1/table/${idOf(t.id)}/count_rows`, predicate ? { predicate } : {}));
      // Its own rows, each still marked (a change to any would show).
      out[`marked rows of ${id}`] = await count(`name = '${rowMarker(t.id)}'`);
      if (id === 'sp_raw$sp_events') {
        out['events count'] = await count(); // may only grow: compared apart
        continue;
      }
      out[`rows of ${id}`] = await count();
      out[`versions of ${id}`] = await text(a.post(`/v1/table/${idOf(t.id)}/version/list`, {}));
    }
    return out;
  }

  /** Names and row markers outside the key's grants that its answer shows, though its request did not say them. */
  function leaked(req: FuzzRequest, r: RawResponse): string[] {
    const said = [req.target, req.body?.toString('latin1') ?? '', ...req.headers.map(([, v]) => v)];
    let t = req.target;
    for (let i = 0; i < 2; i++) {
      try {
        t = decodeURIComponent(t);
        said.push(t);
      } catch {
        break;
      }
    }
    const answer = r.body.toString('utf8') + Object.values(r.headers).join('\n');
    return (SCOPED_GRANTS[req.credential]?.unseen ?? []).filter((n) => answer.includes(n) && !said.some((x) => x.includes(n)));
  }

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'lgw-fuzz-'));
    pg = kind === 'postgres' ? await createPgDatabase() : undefined;
    gw = new SupervisedGateway(
      {
        DATA_DIR: dataDir,
        ADMIN_API_KEY: ADMIN_KEY,
        BOOTSTRAP_DATABASE: '',
        DATABASE_URL: pg?.url ?? '',
        REDIS_URL: '',
        // Throttling is its own tested feature (a deliberate 503): the budget is set out of the fuzzer's reach.
        RATE_LIMIT_LIMIT: '100000000',
        LOG_LEVEL: 'error',
      },
      // A bounded heap: a request that makes the process run out of memory does so quickly, and without taking
      // gigabytes from the other suites that share the machine.
      ['--max-old-space-size=768'],
    );
    await gw.start();

    // Tenants and keys, through the operator API.
    const op = operator({ url: gw.url });
    const mk = async (name: string) => {
      const r = await op.post('/admin/v1/databases', { name });
      assert.equal(r.status, 201, r.text);
    };
    const key = async (db: string, role: string) => {
      const r = await op.post(`/admin/v1/databases/${db}/api-keys`, { role });
      assert.equal(r.status, 201, r.text);
      return r.body.api_key as string;
    };
    for (const db of [FUZZED, NEIGHBOUR, HONEST, SCRATCH]) await mk(db);
    keys = { admin: await key(FUZZED, 'admin'), read: await key(FUZZED, 'read'), foreign: await key(NEIGHBOUR, 'write') };
    honestKey = await key(HONEST, 'write');

    // The honest workload: a namespace and a table written through the official client.
    const db = await lancedb.connectNamespace('rest', { uri: gw.url, headers: { 'x-api-key': honestKey, 'x-service-database': HONEST } });
    await db.createNamespace(['hr']);
    const rows = (from: number, n: number) =>
      Array.from({ length: n }, (_, i) => ({ id: from + i, label: `person-${from + i}`, vector: [from + i, 1, 2, 3] }));
    const people = await db.createTable('people', rows(0, 30), ['hr']);
    await people.add(rows(30, 12));
    db.close();
    honestBefore = await honestSnapshot();
    assert.equal(honestBefore.count, 42);

    // The neighbour has a table of the same name as the fuzzer's, so a leak across databases would find it.
    const n = api({ 'x-api-key': keys.foreign, 'x-service-database': NEIGHBOUR });
    assert.equal((await n.post('/v1/namespace/ns1/create', {})).status, 200);
    const created = await fetch(`${gw.url}/v1/table/ns1%24t1/create`, {
      method: 'POST',
      headers: { 'x-api-key': keys.foreign, 'x-service-database': NEIGHBOUR, 'content-type': 'application/vnd.apache.arrow.stream' },
      body: fixtureStream(0, 5),
    });
    assert.equal(created.status, 200, await created.text());

    await replenish();
    const a = api({ 'x-api-key': keys.admin, 'x-service-database': FUZZED });
    await a.post('/v1/table/ns1%24t1/create_index', { column: 'id', index_type: 'BTREE' });
    await a.post('/v1/table/ns1%24t1/create_index', { column: 'text', index_type: 'FTS' });

    // Route templates from the running gateway's own OpenAPI document.
    const doc = (await api().get('/openapi.json')).body;
    const ops = operationsOf(doc);
    templates = ops.length;
    assert.ok(ops.length > 20, `the OpenAPI document lists ${ops.length} operations`);
    // Where a `location` may point: fine relative paths, escapes, and the honest database's own table folder.
    const honestFolders = honestBefore.folders;
    const locations = [
      'fz_loc.lance',
      'fz_dir/fz_loc.lance',
      '../honest',
      ...honestFolders.map((f) => `../${HONEST}/${f}`),
      ...honestFolders.map((f) => path.join(dataDir, 'tables', HONEST, f)),
      'file:///etc',
      's3://fz-bucket/x.lance',
      '/tmp',
      '.',
      '..',
      'fz\u0000.lance',
      '%2e%2e/honest',
    ];
    const maker = new RequestMaker(ops, doc.components?.schemas ?? {}, keys, locations);

    // Phase 1: HTTP requests over the route templates, one at a time (so a seed replays the same run).
    const started = Date.now();
    for (let i = 0; i < HTTP_COUNT; i++) {
      if (i % 50 === 0) await replenish();
      const req = maker.make(i);
      const chunked = req.body !== undefined && new Prng(SEED, `chunked/${i}`).chance(0.05);
      await exchange(req, chunked);
      sent++;
      if (crashesSeen >= 3) {
        stoppedEarly = `stopped after request #${i}: the gateway died ${crashesSeen} times`;
        break;
      }
    }

    const httpSeconds = (Date.now() - started) / 1000;

    // Phase 2: malformed HTTP on raw sockets, a few at a time (each case stands alone).
    const cases = Array.from({ length: crashesSeen >= 3 ? 0 : RAW_COUNT }, (_, i) => i);
    const runRaw = async (i: number) => {
      const c = rawCase(i, hostPort(), keys);
      const bytes = Buffer.concat(
        c.steps.flatMap((s) => (typeof s === 'string' ? [Buffer.from(s, 'latin1')] : Buffer.isBuffer(s) ? [s] : [])),
      );
      const firstLine = bytes.subarray(0, Math.max(0, bytes.indexOf('\r\n'))).toString('latin1');
      const req: ReqInfo = {
        phase: 'raw',
        index: i,
        method: c.methods[c.methods.length - 1],
        template: `raw:${c.name}`,
        target: firstLine,
        credential: 'admin',
        note: c.name,
        body: bytes,
      };
      const res: RawExchange = await rawExchange('127.0.0.1', gw.portNumber, c.steps, {
        timeoutMs: HANG_MS,
        methods: c.methods,
        halfClose: c.halfClose,
        closeAfterMs: c.closeAfterMs,
      });
      rawSent++;
      res.responses.forEach((r, k) => judge({ ...req, method: c.methods[k] ?? req.method }, r));
      if (c.answerDue && res.outcome === 'timeout' && res.responses.length < c.methods.length)
        record('hang', req, undefined, `no answer and no close within ${HANG_MS} ms (${res.responses.length}/${c.methods.length} answers)`);
      if (c.answerDue && res.errorWhileWriting)
        record(
          'dropped',
          req,
          res.responses[0]?.status,
          `socket ${res.error} while the request was being sent: the server closed without reading it`,
          `socket ${res.error} while sending`,
        );
    };
    for (let at = 0; at < cases.length; at += 4) {
      await Promise.all(cases.slice(at, at + 4).map(runRaw));
      if (!gw.alive)
        await checkAlive({ phase: 'raw', index: at, method: '-', template: 'raw', target: '', credential: '-', note: 'raw batch' });
    }

    const rawSeconds = (Date.now() - started) / 1000 - httpSeconds;

    // Phase 3: the same fuzzing, on the catalog routes, with keys whose grants narrow them (SCOPED_GRANTS), in a
    // database of their own: nothing outside a key's grants may change, and no answer may show a name outside them.
    const scopedStarted = Date.now();
    if (crashesSeen < 3) {
      await scopedSetup();
      // No maintenance job may add a version while the run is compared (the tables are tiny: it would do nothing).
      assert.equal(
        (await operator({ url: gw.url }).request('PUT', `/admin/v1/databases/${SCOPED}/maintenance`, { enabled: false })).status,
        200,
      );
      scopedBefore = await scopedSnapshot();
      const scopedFolders = fs.readdirSync(path.join(dataDir, 'tables', SCOPED)).map((f) => `../${SCOPED}/${f}`);
      const scopedMaker = new RequestMaker(ops, doc.components?.schemas ?? {}, keys, [...locations, ...scopedFolders, ...scopedFolders], {
        label: 'scoped',
        database: SCOPED,
        tableIds: SCOPED_TABLE_IDS,
        namespaceIds: SCOPED_NAMESPACE_IDS,
        scopedKeys,
      });
      for (let i = 0; i < SCOPED_COUNT && crashesSeen < 3; i++) {
        const req = scopedMaker.make(i);
        const r = await exchange(req, false);
        scopedSent++;
        if (r && r.status < 300) scopedOk.set(req.credential, (scopedOk.get(req.credential) ?? 0) + 1);
        const shown = r ? leaked(req, r) : [];
        if (r && shown.length)
          record(
            'leak',
            req,
            r.status,
            `shows ${shown.join(', ')}: ${snippet(r.body, 400)}`,
            `${req.credential} key shown ${shown.join(', ')}`,
          );
      }
    }
    const scopedSeconds = (Date.now() - scopedStarted) / 1000;
    // A 500 says only "internal error": the gateway's log says why (grouping then tells the causes apart).
    await new Promise((r) => setTimeout(r, 200)); // the last log lines are still in the pipe
    for (const o of offenders) {
      if (o.kind !== '5xx' || !o.instance) continue;
      const logged = gw.loggedError(o.instance);
      if (logged) {
        o.cause = `${o.cause}; logged: ${logged.replace(/\/\S+\/(node_modules|registry\/src)\/\S+/g, '…').slice(0, 160)}`;
        o.answer = `${o.answer}\n     logged: ${logged.slice(0, 400)}`;
      }
    }
    const line =
      `fuzz [${kind}] seed=${JSON.stringify(SEED)}: ${sent} HTTP requests over ${templates} operations (${httpSeconds.toFixed(0)} s) + ${rawSent} raw-socket cases (${rawSeconds.toFixed(0)} s) + ${scopedSent} with scoped keys (${scopedSeconds.toFixed(0)} s, 2xx ${JSON.stringify(Object.fromEntries(scopedOk))}); ` +
      `statuses ${JSON.stringify(Object.fromEntries([...statuses].sort((x, y) => x[0] - y[0])))}; ${offenders.length} offenders${stoppedEarly ? `; ${stoppedEarly}` : ''}`;
    console.log(line);
    if (offenders.length) console.log(groups(offenders).slice(0, 60).join('\n'));
  });

  after(async () => {
    await gw?.stop();
    await pg?.drop();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  /** Offenders of these kinds, for an assertion message: grouped counts, then the first SHOW in full, with the seed. */
  function report(kinds: string[]): { list: Offender[]; message: string } {
    const list = offenders.filter((o) => kinds.includes(o.kind));
    const shown = list
      .slice(0, SHOW)
      .map(
        (o) =>
          `  [${o.phase} #${o.index}] ${o.method} ${o.target} (${o.template}; credential ${o.credential}; ${o.note})\n     headers ${o.headers} body ${o.body}\n     → ${o.status ?? '-'} ${o.answer}`,
      );
    const message =
      `${list.length} offenders (${kinds.join(', ')}), FUZZ_SEED=${JSON.stringify(SEED)} FUZZ_COUNT=${TOTAL} TEST_CATALOGS=${CATALOG_KINDS.join(',')} (${kind}):\n` +
      groups(list).join('\n') +
      `\nfirst ${Math.min(SHOW, list.length)}:\n${shown.join('\n')}`;
    return { list, message };
  }

  it('the gateway process never died or stopped answering', () => {
    const r = report(['crash', 'unresponsive']);
    assert.equal(r.list.length, 0, r.message);
  });

  it('no input gets a 5xx', () => {
    const r = report(['5xx']);
    assert.equal(r.list.length, 0, r.message);
  });

  it('every request is answered: no hang, no connection dropped before the answer', () => {
    const r = report(['hang', 'dropped']);
    assert.equal(r.list.length, 0, r.message);
  });

  it('every error answer with a body is the problem body with an integer code', () => {
    const r = report(['problem-body']);
    assert.equal(r.list.length, 0, r.message);
  });

  it('answers to HEAD carry no body', () => {
    const r = report(['head-body']);
    assert.equal(r.list.length, 0, r.message);
  });

  it('scoped keys: no answer shows a name or a row outside the grants of the key that asked', () => {
    assert.ok(scopedSent > 0, 'the scoped run ran');
    if (scopedSent >= 300)
      for (const k of Object.keys(SCOPED_GRANTS))
        assert.ok((scopedOk.get(k) ?? 0) > 0, `the ${k} key never got a 2xx: the run tested refusals only`);
    const r = report(['leak']);
    assert.equal(r.list.length, 0, r.message);
  });

  it('scoped keys: nothing outside their grants changed (rows were only added where the ingest key may insert)', async () => {
    assert.ok(scopedSent > 0, 'the scoped run ran');
    const now = await scopedSnapshot();
    assert.ok(Number(now['events count'].split(' ')[1]) >= Number(scopedBefore['events count'].split(' ')[1]), 'no event was removed');
    for (const what of Object.keys(scopedBefore))
      if (what !== 'events count') assert.equal(now[what], scopedBefore[what], `${what} changed`);
    // Their refusals are in the audit trail (written once a second).
    await eventually(async () => {
      const trail = await operator({ url: gw.url }).get(`/admin/v1/databases/${SCOPED}/audit?limit=1000`);
      return (trail.body.events as any[]).some((e) => e.action === 'request.refused');
    });
  });

  it('afterwards /healthz is 200 and the honest workload is intact, with nothing of the fuzzer in it', async () => {
    assert.ok(sent > 0 && templates > 0);
    const health = await api().get('/healthz');
    assert.equal(health.status, 200, health.text);
    const now = await honestSnapshot();
    assert.equal(now.count, honestBefore.count);
    assert.equal(now.rows, honestBefore.rows);
    assert.deepEqual(now.tableNames, honestBefore.tableNames);
    assert.deepEqual(now.namespaces, honestBefore.namespaces);
    assert.deepEqual(now.folders, honestBefore.folders);
    for (const [what, text] of Object.entries(now.listings)) {
      assert.equal(text, honestBefore.listings[what], `${what} changed`);
      for (const m of MARKERS) assert.ok(!text.includes(m), `${what} shows '${m}' from the fuzzer: ${text.slice(0, 500)}`);
    }
  });
});

/** "N × kind → status: cause (routes…)", most frequent first. */
function groups(list: Offender[]): string[] {
  const byCause = new Map<string, { n: number; routes: Map<string, number> }>();
  for (const o of list) {
    const key = `${o.kind} → ${o.status ?? '-'}: ${o.cause}`;
    const g = byCause.get(key) ?? { n: 0, routes: new Map<string, number>() };
    g.n++;
    const route = `${o.method} ${o.template}`;
    g.routes.set(route, (g.routes.get(route) ?? 0) + 1);
    byCause.set(key, g);
  }
  return [...byCause]
    .sort((a, b) => b[1].n - a[1].n)
    .map(([k, g]) => {
      const routes = [...g.routes].sort((a, b) => b[1] - a[1]);
      const shown = routes
        .slice(0, 6)
        .map(([r, n]) => (n > 1 ? `${r} ×${n}` : r))
        .join('; ');
      return `  ${String(g.n).padStart(4)} × ${k}\n         on ${shown}${routes.length > 6 ? `; and ${routes.length - 6} more routes` : ''}`;
    });
}

/** A short, stable description of an answer body, for grouping: its code or detail, ids blanked. */
function causeOf(body: Buffer | string): string {
  const text = Buffer.isBuffer(body) ? body.toString('utf8') : body;
  let cause = text;
  try {
    const b = JSON.parse(text);
    cause = typeof b?.code === 'string' ? b.code : String(b?.detail ?? b?.message ?? text);
  } catch {
    /* not JSON: the text itself */
  }
  return cause
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uuid>')
    .replace(/'[^']{40,}'/g, "'…'")
    .slice(0, 120);
}
