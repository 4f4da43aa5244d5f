import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as lancedb from '@lancedb/lancedb';
import * as arrow from 'apache-arrow';
import { Api, CATALOG_KINDS, eventually, newTenant, operator, Reply, startGateway, Tenant, TestGateway } from './helpers/gateway';
import { expectProblem } from './helpers/assertions';
import { TestIssuer } from './helpers/jwks';
import { stsProfile, StsStub } from './helpers/sts-stub';
import { freshPrefix, LocalS3, TEST_BUCKET, useLocalS3 } from './helpers/s3';

/**
 * Grants (issue 34, docs/adr/0009-grants.md): a key's role narrowed to privileges on the database, namespaces and
 * tables, against the real gateway, catalog and Lance tables. Every catalog route of the gateway's own /openapi.json
 * is called by keys of several grant shapes on objects they hold, see without holding, and cannot see.
 */

type Json = Record<string, any>;
type Privilege = 'describe' | 'select' | 'insert' | 'modify' | 'create' | 'manage' | 'admin';
type Kind = 'table' | 'namespace';
type GrantOn = { database: true } | { namespace: string[] } | { table: string[] };
interface Grant {
  privileges: Privilege[];
  on: GrantOn;
}

const kind = CATALOG_KINDS.includes('postgres') || CATALOG_KINDS.length === 0 ? 'postgres' : CATALOG_KINDS[0];
const ARROW = 'application/vnd.apache.arrow.stream';
const ZERO_UUID = '00000000-0000-4000-8000-000000000000';
const ABSENT = '_zq9';
/** The routes that make their `{id}` object: their namespace is what must be visible. */
const CREATES = new Set([
  'CreateNamespace',
  'DeclareTable',
  'RegisterTable',
  'CreateTable',
  'EnterpriseCreateTable',
  'CreateMaterializedView',
  'CloneTable',
]);

const arrowRows = (from: number, n: number) =>
  Buffer.from(
    arrow.tableToIPC(
      arrow.tableFromArrays({
        id: Float64Array.from({ length: n }, (_, i) => from + i),
        label: Array.from({ length: n }, (_, i) => `row-${from + i}`),
      }),
      'stream',
    ),
  );
const enc = (path: readonly string[]) => encodeURIComponent(path.length === 0 ? '$' : path.join('$'));
const isPrefix = (prefix: readonly string[], path: readonly string[]) =>
  prefix.length <= path.length && prefix.every((p, i) => path[i] === p);
const DB_PRIVILEGES: Record<string, Privilege[]> = {
  read: ['describe', 'select'],
  write: ['describe', 'select', 'insert', 'modify', 'create', 'manage'],
  admin: ['describe', 'select', 'insert', 'modify', 'create', 'manage', 'admin'],
};

/**
 * What the documentation (ADR 0009) says a credential may do, written apart from src/: the test's own model of
 * grants. A namespace grant covers the namespace and all below; a table grant that table; every privilege implies
 * describe on its object; namespaces on the way to a granted object are visible.
 */
class Model {
  constructor(
    readonly role: 'read' | 'write' | 'admin',
    readonly grants: Grant[],
  ) {}

  held(k: Kind, path: readonly string[]): Set<Privilege> {
    const out = new Set<Privilege>();
    for (const g of this.grants) {
      const privileges = g.privileges.filter((p) => DB_PRIVILEGES[this.role].includes(p));
      const covers =
        'database' in g.on ||
        ('namespace' in g.on && (k === 'namespace' ? isPrefix(g.on.namespace, path) : isPrefix(g.on.namespace, path.slice(0, -1)))) ||
        ('table' in g.on && k === 'table' && g.on.table.join('\0') === path.join('\0'));
      if (covers) privileges.forEach((p) => out.add(p));
    }
    return out;
  }

  visible(k: Kind, path: readonly string[]): boolean {
    if (this.held(k, path).size > 0) return true;
    if (k === 'table') return false;
    return this.grants.some(
      (g) => ('namespace' in g.on && isPrefix(path, g.on.namespace)) || ('table' in g.on && isPrefix(path, g.on.table.slice(0, -1))),
    );
  }

  onDatabase(p: Privilege): boolean {
    const held = new Set(this.grants.filter((g) => 'database' in g.on).flatMap((g) => g.privileges));
    return held.has(p) || (p === 'describe' && held.size > 0);
  }

  /** pass, forbidden (403: it sees the object) or hidden (the answer of a missing object). */
  expect(p: Privilege, k: Kind, path: readonly string[], creates: boolean): 'pass' | 'forbidden' | 'hidden' {
    const held = this.held(k, path);
    if (held.has(p) || (p === 'describe' && (held.size > 0 || this.visible(k, path)))) return 'pass';
    if (this.visible(k, path)) return 'forbidden';
    if (creates) return this.visible('namespace', path.slice(0, -1)) ? 'forbidden' : 'hidden';
    return 'hidden';
  }

  /** The same object path with its first component the credential cannot see renamed to one that does not exist. */
  absentTwin(k: Kind, path: readonly string[]): string[] {
    for (let i = 1; i <= path.length; i++) {
      const last = i === path.length;
      const seen = last && k === 'table' ? this.visible('table', path) : this.visible('namespace', path.slice(0, i));
      if (!seen) return path.map((c, j) => (j === i - 1 ? c + ABSENT : c));
    }
    throw new Error(`${path.join('$')} is visible`);
  }
}

interface ScopedKey {
  label: string;
  id: string;
  secret: string;
  api: Api;
  model: Model;
}

/** An answer without its request id, with the absent twin's marker taken out: what two probes must share. */
const comparable = (r: Reply) => {
  const { instance: _instance, ...rest } = (r.body ?? {}) as Json;
  return { status: r.status, ...JSON.parse(JSON.stringify(rest).split(ABSENT).join('')) };
};

describe(`grants: privileges on database, namespaces and tables [${kind}]`, () => {
  let gw: TestGateway;
  let op: Api;
  let t: Tenant;
  let admin: Api;
  const issuer = new TestIssuer();
  const keys: Record<string, ScopedKey> = {};
  let counter = 0;
  const fresh = (p: string) => `${p}_${++counter}`;

  const keysUrl = () => `/admin/v1/databases/${t.name}/api-keys`;
  const scoped = async (label: string, role: 'read' | 'write' | 'admin', grants: Grant[] | null): Promise<ScopedKey> => {
    const r = await op.post(keysUrl(), { role, grants, name: label });
    assert.equal(r.status, 201, r.text);
    assert.deepEqual(r.body.grants, grants);
    return {
      label,
      id: r.body.id,
      secret: r.body.api_key,
      api: new Api(gw.url, { 'x-api-key': r.body.api_key, 'x-service-database': t.name }),
      model: new Model(role, grants ?? [{ privileges: DB_PRIVILEGES[role], on: { database: true } }]),
    };
  };
  const createTable = async (api: Api, path: string[], rows: number) => {
    const r = await api.request('POST', `/v1/table/${enc(path)}/create`, arrowRows(0, rows), { 'content-type': ARROW });
    assert.equal(r.status, 200, r.text);
  };
  const countRows = async (path: string[]) => {
    const r = await admin.post(`/v1/table/${enc(path)}/count_rows`, {});
    assert.equal(r.status, 200, r.text);
    return Number(r.body);
  };
  const listAll = async (api: Api, limit: number): Promise<{ pages: string[][] }> => {
    const pages: string[][] = [];
    let token: string | undefined;
    do {
      const r = await api.get(`/v1/table?limit=${limit}${token ? `&page_token=${encodeURIComponent(token)}` : ''}`);
      assert.equal(r.status, 200, r.text);
      pages.push(r.body.tables);
      token = r.body.page_token;
      assert.ok(pages.length < 10_000);
    } while (token);
    return { pages };
  };

  before(async () => {
    await issuer.start();
    gw = await startGateway(kind, { ...issuer.env(), RATE_LIMIT_LIMIT: '1000000' });
    op = operator(gw);
    t = await newTenant(gw);
    const issued = await op.post(keysUrl(), { role: 'admin' });
    admin = new Api(gw.url, { 'x-api-key': issued.body.api_key, 'x-service-database': t.name });
    for (const ns of [['prod'], ['prod', 'catalog'], ['raw'], ['staging']]) {
      assert.equal((await admin.post(`/v1/namespace/${enc(ns)}/create`, {})).status, 200);
    }
    await createTable(admin, ['prod', 'catalog', 'items'], 5);
    await createTable(admin, ['prod', 'catalog', 'orders'], 2);
    await createTable(admin, ['raw', 'events'], 3);
    assert.equal((await admin.post(`/v1/table/${enc(['raw', 'logs'])}/declare`, {})).status, 200);
    assert.equal((await admin.post(`/v1/table/${enc(['staging', 'victim'])}/declare`, {})).status, 200);

    keys.query = await scoped('query', 'read', [{ privileges: ['select'], on: { namespace: ['prod', 'catalog'] } }]);
    keys.ingest = await scoped('ingest', 'write', [{ privileges: ['insert'], on: { table: ['raw', 'events'] } }]);
    keys.peek = await scoped('peek', 'read', [{ privileges: ['describe'], on: { table: ['raw', 'logs'] } }]);
    keys.builder = await scoped('builder', 'write', [{ privileges: ['create', 'manage'], on: { namespace: ['staging'] } }]);
    keys.dbSelect = await scoped('dbSelect', 'write', [{ privileges: ['select'], on: { database: true } }]);
  });
  after(async () => {
    await gw?.close();
    await issuer.stop();
  });

  it('every catalog route of /openapi.json: held passes, seen-but-not-held is 403, unseen answers as missing, and nothing changes', async () => {
    const doc = (await new Api(gw.url).get('/openapi.json')).body as Json;
    const routes: { method: string; path: string; op: Json; need: { privilege: Privilege; on: string } }[] = [];
    for (const [path, item] of Object.entries<Json>(doc.paths)) {
      for (const [method, o] of Object.entries<Json>(item)) {
        if (o['x-required-privilege']) routes.push({ method: method.toUpperCase(), path, op: o, need: o['x-required-privilege'] });
      }
    }
    assert.ok(routes.length > 60, `${routes.length} catalog routes`);
    for (const id of CREATES)
      assert.ok(
        routes.some((r) => r.op.operationId === id),
        `${id} is a catalog route`,
      );
    for (const on of ['table', 'namespace', 'database', 'listing', 'service'])
      assert.ok(
        routes.some((r) => r.need.on === on),
        on,
      );

    const snapshot = async () => {
      const tables = (await listAll(admin, 1000)).pages.flat().filter((n) => !n.startsWith('staging$'));
      const namespaces: Json = {};
      for (const ns of [[], ['prod'], ['prod', 'catalog'], ['raw']]) {
        namespaces[ns.join('$')] = (await admin.get(`/v1/namespace/${enc(ns)}/list`)).body.namespaces;
      }
      const versions: Json = {};
      for (const p of [
        ['prod', 'catalog', 'items'],
        ['raw', 'events'],
      ]) {
        versions[p.join('$')] = (await admin.post(`/v1/table/${enc(p)}/version/list`, {})).body;
      }
      return {
        tables,
        namespaces,
        versions,
        items: await countRows(['prod', 'catalog', 'items']),
        events: await countRows(['raw', 'events']),
      };
    };
    const before = await snapshot();
    assert.deepEqual(before.tables, ['prod$catalog$items', 'prod$catalog$orders', 'raw$events', 'raw$logs']);

    /** Puts back what a builder's (allowed) call may have dropped or renamed in staging. */
    const restoreStaging = async () => {
      if ((await admin.post(`/v1/namespace/${enc(['staging'])}/exists`, {})).status === 404) {
        assert.equal((await admin.post(`/v1/namespace/${enc(['staging'])}/create`, {})).status, 200);
      }
      if ((await admin.post(`/v1/table/${enc(['staging', 'victim'])}/exists`, {})).status === 404) {
        const d = await admin.post(`/v1/table/${enc(['staging', 'victim'])}/declare`, {});
        assert.equal(d.status, 200, d.text);
      }
    };
    const urlOf = (path: string, target: readonly string[]) =>
      path
        .replace('{id}', enc(target))
        .replace('{name}', target[target.length - 1])
        .replace('{index_name}', 'probe_idx')
        .replace('{dropped_id}', ZERO_UUID);
    const call = (k: ScopedKey, r: (typeof routes)[number], target: readonly string[]) =>
      k.api.request(r.method, urlOf(r.path, target), r.method === 'POST' ? {} : undefined);
    const show = (k: ScopedKey, r: (typeof routes)[number], target: readonly string[], res: Reply) =>
      `${k.label}: ${r.method} ${urlOf(r.path, target)} → ${res.status} ${res.text.slice(0, 300)}`;

    const TABLES = [
      ['prod', 'catalog', 'items'],
      ['raw', 'events'],
      ['raw', 'logs'],
      ['staging', 'victim'],
      ['nowhere', 'x'],
    ];
    const NAMESPACES = [['prod'], ['prod', 'catalog'], ['raw'], ['staging']];
    const tally = { pass: 0, forbidden: 0, hidden: 0 };
    for (const r of routes) {
      // Listings are paged below; routes whose service checks the object (jobs) have their own test.
      if (r.need.on === 'listing' || r.need.on === 'service') continue;
      const creates = CREATES.has(r.op.operationId);
      for (const k of Object.values(keys)) {
        if (r.need.on === 'database') {
          const target = r.path.includes('/namespace/') ? ['prod'] : ['prod', 'catalog', 'items'];
          const res = await call(k, r, target);
          if (k.model.onDatabase(r.need.privilege)) {
            assert.ok(![401, 403].includes(res.status), `passes: ${show(k, r, target, res)}`);
            tally.pass++;
          } else {
            expectProblem(res, 403, 15, { what: show(k, r, target, res), msg: new RegExp(`needs '${r.need.privilege}' on the database`) });
            tally.forbidden++;
          }
          continue;
        }
        const objectKind = r.need.on as Kind;
        const targets =
          r.path === '/v1/tables/{name}'
            ? [[fresh('root_t')]]
            : creates
              ? NAMESPACES.map((ns) => [...ns, fresh('made')])
              : objectKind === 'table'
                ? TABLES
                : NAMESPACES;
        for (const target of targets) {
          const expected = k.model.expect(r.need.privilege, objectKind, target, creates);
          const res = await call(k, r, target);
          const what = show(k, r, target, res);
          tally[expected]++;
          if (expected === 'pass') {
            assert.ok(![401, 403].includes(res.status), `passes: ${what}`);
            if (res.status === 404 && target[0] !== 'nowhere') {
              // Not the guard's "missing" for an object that exists (or, for a create, whose namespace exists).
              assert.notEqual(res.body.code, 1, `passes: ${what}`);
              if (!creates) assert.ok(!(res.body.code === 4 && res.body.detail === target.join('$')), `passes: ${what}`);
            }
            if (k.label === 'builder') await restoreStaging();
          } else if (expected === 'forbidden') {
            expectProblem(res, 403, 15, { what, msg: new RegExp(`needs '${r.need.privilege}'`) });
          } else {
            // DropNamespace answers a missing namespace with 400 code 1 (rest-contract §4.3), not 404.
            const missingStatus = r.op.operationId === 'DropNamespace' ? 400 : 404;
            assert.equal(res.status, missingStatus, `hidden: ${what}`);
            const twin = k.model.absentTwin(creates ? 'namespace' : objectKind, creates ? target.slice(0, -1) : target);
            const twinTarget = creates ? [...twin, target[target.length - 1]] : twin;
            const absent = await call(k, r, twinTarget);
            assert.deepEqual(comparable(res), comparable(absent), `hidden answers as missing: ${what} vs ${absent.text}`);
            // The missing object's own answer: a table of a visible namespace is TableNotFound (its id), anything else
            // NamespaceNotFound of the namespace that is missing to this key (the table's, or a create's parent).
            const parent = target.slice(0, -1).join('$');
            if (!creates && objectKind === 'table' && k.model.visible('namespace', target.slice(0, -1))) {
              expectProblem(res, 404, 4, { what });
              assert.equal(res.body.detail, target.join('$'), what);
            } else {
              expectProblem(res, missingStatus, 1, { what });
              const want = creates
                ? objectKind === 'namespace'
                  ? `parent namespace '${parent}'`
                  : parent
                : objectKind === 'table'
                  ? parent
                  : target.join('$');
              assert.equal(res.body.detail, want, what);
            }
          }
        }
      }
    }
    assert.ok(tally.pass > 100 && tally.forbidden > 100 && tally.hidden > 100, JSON.stringify(tally));
    await restoreStaging();
    assert.deepEqual(await snapshot(), before, 'refused requests changed nothing');
  });

  it('official client, both modes: a query-only key opens, queries and lists only its subtree, and cannot add rows', async () => {
    const remote = await lancedb.connect(`db://${t.name}`, { apiKey: keys.query.secret, hostOverride: gw.url });
    const ns = await lancedb.connectNamespace('rest', {
      uri: gw.url,
      headers: { 'x-api-key': keys.query.secret, 'x-service-database': t.name },
    });
    try {
      for (const db of [remote, ns]) {
        const items = await db.openTable('items', ['prod', 'catalog']);
        assert.equal(await items.countRows(), 5);
        assert.deepEqual((await items.query().where('id < 2').toArray()).map((r) => Number(r.id)).sort(), [0, 1]);
        assert.deepEqual(await db.tableNames(['prod', 'catalog']), ['items', 'orders']);
        assert.deepEqual((await db.listNamespaces()).namespaces, ['prod'], 'only the way to the grant');
        // Remote mode lists the whole database at its root (GET /v1/table), namespace mode the root's own tables.
        assert.deepEqual(await db.tableNames(), db === remote ? ['prod$catalog$items', 'prod$catalog$orders'] : []);
        await assert.rejects(db.openTable('events', ['raw']), /not found/i);
        await assert.rejects(db.tableNames(['raw']), /not found/i);
      }
      const items = await remote.openTable('items', ['prod', 'catalog']);
      await assert.rejects(items.add([{ id: 100, label: 'no' }]), /denied|forbidden|403|needs 'insert'/i);
      assert.equal(await countRows(['prod', 'catalog', 'items']), 5, 'nothing added');
    } finally {
      remote.close();
      ns.close();
    }
  });

  it('official client, namespace mode with catalog-managed versions: the query-only key cannot commit rows', async () => {
    const m = await newTenant(gw);
    const patched = await op.request('PATCH', `/admin/v1/databases/${m.name}`, { managed_versioning: true });
    assert.equal(patched.status, 200, patched.text);
    for (const ns of [['prod'], ['prod', 'catalog']]) assert.equal((await m.api.post(`/v1/namespace/${enc(ns)}/create`, {})).status, 200);
    await createTable(m.api, ['prod', 'catalog', 'items'], 4);
    const issued = await op.post(`/admin/v1/databases/${m.name}/api-keys`, {
      role: 'write',
      grants: [{ privileges: ['select'], on: { namespace: ['prod', 'catalog'] } }],
    });
    assert.equal(issued.status, 201, issued.text);
    const db = await lancedb.connectNamespace('rest', {
      uri: gw.url,
      headers: { 'x-api-key': issued.body.api_key, 'x-service-database': m.name },
    });
    try {
      const items = await db.openTable('items', ['prod', 'catalog']);
      assert.equal(await items.countRows(), 4);
      // The client commits through CreateTableVersion, refused (403); it then reports the commit as unknown.
      await assert.rejects(items.add([{ id: 100, label: 'no' }]), /denied|forbidden|403|needs 'insert'|commit result .* is unknown/i);
    } finally {
      db.close();
    }
    const count = await m.api.post(`/v1/table/${enc(['prod', 'catalog', 'items'])}/count_rows`, {});
    assert.equal(Number(count.body), 4, 'nothing committed');
  });

  it('official client, remote mode: an ingest-only key adds rows and cannot query', async () => {
    const db = await lancedb.connect(`db://${t.name}`, { apiKey: keys.ingest.secret, hostOverride: gw.url });
    try {
      const before = await countRows(['raw', 'events']);
      const events = await db.openTable('events', ['raw']);
      await events.add([
        { id: 50, label: 'a' },
        { id: 51, label: 'b' },
      ]);
      assert.equal(await countRows(['raw', 'events']), before + 2);
      await assert.rejects(events.query().toArray(), /denied|forbidden|403|needs 'select'/i);
      await assert.rejects(events.countRows(), /denied|forbidden|403|needs 'select'/i);
      assert.deepEqual(await db.tableNames(['raw']), ['events']);
      await assert.rejects(db.openTable('items', ['prod', 'catalog']), /not found/i);
    } finally {
      db.close();
    }
  });

  it('filtered listings over 1,100 tables: full pages, valid tokens, no duplicates, nothing outside the grants', async () => {
    const big = await newTenant(gw);
    for (const ns of [['a'], ['a', 'x'], ['b'], ['c']])
      assert.equal((await big.api.post(`/v1/namespace/${enc(ns)}/create`, {})).status, 200);
    const pad = (i: number) => String(i).padStart(4, '0');
    const all: string[][] = [
      ...Array.from({ length: 400 }, (_, i) => ['a', `t${pad(i)}`]),
      ...Array.from({ length: 200 }, (_, i) => ['a', 'x', `u${pad(i)}`]),
      ...Array.from({ length: 300 }, (_, i) => ['b', `v${pad(i)}`]),
      ...Array.from({ length: 200 }, (_, i) => ['c', `w${pad(i)}`]),
    ];
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < all.length) {
          const path = all[next++];
          const r = await big.api.post(`/v1/table/${enc(path)}/declare`, {});
          assert.equal(r.status, 200, r.text);
        }
      }),
    );
    const issued = await op.post(`/admin/v1/databases/${big.name}/api-keys`, {
      role: 'read',
      grants: [
        { privileges: ['describe'], on: { namespace: ['a', 'x'] } },
        { privileges: ['select'], on: { table: ['a', 'x', 'u0005'] } },
        { privileges: ['select'], on: { table: ['b', 'v0007'] } },
        { privileges: ['describe'], on: { table: ['b', 'v0150'] } },
        { privileges: ['select'], on: { table: ['c', 'w0199'] } },
        { privileges: ['select'], on: { table: ['c', 'gone'] } },
      ],
    });
    assert.equal(issued.status, 201, issued.text);
    const api = new Api(gw.url, { 'x-api-key': issued.body.api_key, 'x-service-database': big.name });
    const expected = [...all.filter((p) => p[0] === 'a' && p[1] === 'x').map((p) => p.join('$')), 'b$v0007', 'b$v0150', 'c$w0199'];
    const unscoped = (await listAll(big.api, 10_000)).pages.flat();
    assert.equal(unscoped.length, all.length, 'the unscoped key lists every table');

    const check = (pages: string[][], limit: number, want: string[], what: string) => {
      pages.slice(0, -1).forEach((p, i) => assert.equal(p.length, limit, `${what}: page ${i} is full`));
      assert.ok(pages[pages.length - 1].length <= limit && pages[pages.length - 1].length > 0, what);
      const flat = pages.flat();
      assert.equal(new Set(flat).size, flat.length, `${what}: no duplicates`);
      assert.deepEqual(flat, want, `${what}: exactly the granted tables, in order`);
    };
    for (const limit of [17, 50, 1000]) {
      for (const route of ['/v1/table', '/v1/tables']) {
        const pages: string[][] = [];
        let token: string | undefined;
        do {
          const r = await api.get(`${route}?limit=${limit}${token ? `&page_token=${encodeURIComponent(token)}` : ''}`);
          assert.equal(r.status, 200, r.text);
          pages.push(r.body.tables);
          token = r.body.page_token;
        } while (token && pages.length < 1000);
        check(pages, limit, expected, `${route} limit ${limit}`);
      }
    }
    const listIn = async (ns: string[], limit: number) => {
      const pages: string[][] = [];
      let token: string | undefined;
      do {
        const r = await api.get(
          `/v1/namespace/${enc(ns)}/table/list?limit=${limit}${token ? `&page_token=${encodeURIComponent(token)}` : ''}`,
        );
        assert.equal(r.status, 200, r.text);
        pages.push(r.body.tables);
        token = r.body.page_token;
      } while (token && pages.length < 1000);
      return pages;
    };
    const inAx = all.filter((p) => p[0] === 'a' && p[1] === 'x').map((p) => p[2]);
    check(await listIn(['a', 'x'], 13), 13, inAx, 'ListTables a$x');
    check(await listIn(['b'], 1), 1, ['v0007', 'v0150'], 'ListTables b');
    check(await listIn(['c'], 7), 7, ['w0199'], 'ListTables c');
    assert.deepEqual((await listIn(['a'], 50)).flat(), [], 'a is on the way only: none of its own tables');
    assert.deepEqual((await api.get(`/v1/namespace/${enc([])}/list?limit=1`)).body.namespaces.length, 1);
    const nsPages: string[] = [];
    let token: string | undefined;
    do {
      const r = await api.get(`/v1/namespace/${enc([])}/list?limit=1${token ? `&page_token=${encodeURIComponent(token)}` : ''}`);
      nsPages.push(...r.body.namespaces);
      token = r.body.page_token;
    } while (token && nsPages.length < 10);
    assert.deepEqual(nsPages, ['a', 'b', 'c']);
    assert.deepEqual((await api.get(`/v1/namespace/${enc(['a'])}/list`)).body.namespaces, ['x']);
  });

  it('enumeration probes: hidden objects answer exactly as absent ones, second objects of a route are checked too', async () => {
    const same = (hidden: Reply, absent: Reply, what: string) => assert.deepEqual(comparable(hidden), comparable(absent), what);
    const A = keys.query.api;
    const eventsBefore = await countRows(['raw', 'events']);
    const peek = keys.peek.api;
    // describe/exists: the scoped key on a hidden object, the unscoped key on a missing one.
    for (const [api, path, twin] of [
      [A, ['raw', 'events'], ['raw' + ABSENT, 'events']],
      [A, ['staging', 'victim'], ['staging' + ABSENT, 'victim']],
      [peek, ['raw', 'events'], ['raw', 'events' + ABSENT]],
      [peek, ['prod', 'catalog', 'items'], ['prod' + ABSENT, 'catalog', 'items']],
    ] as [Api, string[], string[]][]) {
      for (const op_ of ['describe', 'exists']) {
        const hidden = await api.post(`/v1/table/${enc(path)}/${op_}`, {});
        assert.equal(hidden.status, 404, hidden.text);
        same(hidden, await admin.post(`/v1/table/${enc(twin)}/${op_}`, {}), `${op_} ${path.join('$')}`);
      }
    }
    for (const ns of [['raw'], ['staging'], ['prod', 'other']]) {
      const twin = [...ns.slice(0, -1), ns[ns.length - 1] + ABSENT];
      for (const op_ of ['describe', 'exists']) {
        const hidden = await A.post(`/v1/namespace/${enc(ns)}/${op_}`, {});
        assert.equal(hidden.status, 404, hidden.text);
        same(hidden, await admin.post(`/v1/namespace/${enc(twin)}/${op_}`, {}), `${op_} namespace ${ns.join('$')}`);
      }
    }
    const location = (await admin.post(`/v1/table/${enc(['raw', 'events'])}/describe`, {})).body.location as string;
    assert.ok(location.length > 0);
    const noLeak = (r: Reply) => {
      assert.ok(!r.text.includes(location) && !r.text.includes('.lance') && !r.text.includes('label'), r.text);
    };
    // Create with exist_ok over a hidden table: the builder (create in staging only) cannot see raw.
    const builder = keys.builder.api;
    const existOk = await builder.request('POST', `/v1/table/${enc(['raw', 'events'])}/create?mode=exist_ok`, arrowRows(0, 1), {
      'content-type': ARROW,
    });
    noLeak(existOk);
    same(
      existOk,
      await admin.request('POST', `/v1/table/${enc(['raw' + ABSENT, 'events'])}/create?mode=exist_ok`, arrowRows(0, 1), {
        'content-type': ARROW,
      }),
      'exist_ok on a hidden table',
    );
    same(
      await builder.post(`/v1/namespace/${enc(['raw', 'sub'])}/create`, {}),
      await admin.post(`/v1/namespace/${enc(['raw' + ABSENT, 'sub'])}/create`, {}),
      'create a namespace in a hidden one',
    );
    same(
      await builder.post(`/v1/table/${enc(['prod', 'catalog', 'items'])}/count_rows`, {}),
      await admin.post(`/v1/table/${enc(['prod' + ABSENT, 'catalog', 'items'])}/count_rows`, {}),
      'a table of a hidden namespace path',
    );
    const declared = await builder.post(`/v1/table/${enc(['raw', 'events'])}/declare`, {});
    noLeak(declared);
    same(declared, await admin.post(`/v1/table/${enc(['raw' + ABSENT, 'events'])}/declare`, {}), 'declare over a hidden table');
    // The query key sees prod$catalog, holds no create there: 403, and nothing of the table.
    const forbidden = await A.request('POST', `/v1/table/${enc(['prod', 'catalog', 'items'])}/create?mode=exist_ok`, arrowRows(0, 1), {
      'content-type': ARROW,
    });
    expectProblem(forbidden, 403, 15);
    noLeak(forbidden);
    // create: overwrite of a table needs manage on it; the peek key's namespace is visible but not creatable.
    expectProblem(await peek.post(`/v1/table/${enc(['raw', 'brand_new'])}/declare`, {}), 403, 15);
    assert.equal(await countRows(['raw', 'events']), eventsBefore, 'the refused creates wrote nothing');

    // Drop namespace cascade: manage on one table inside is not manage on the namespace.
    const tableManager = await scoped('tableManager', 'write', [{ privileges: ['manage'], on: { table: ['prod', 'catalog', 'items'] } }]);
    for (const ns of [['prod', 'catalog'], ['prod']]) {
      expectProblem(await tableManager.api.post(`/v1/namespace/${enc(ns)}/drop`, { behavior: 'Cascade' }), 403, 15, {
        msg: /needs 'manage'/,
      });
    }
    // A hidden namespace drops like a missing one (rest-contract §4.3): 400 code 1 with mode Fail, 204 with Skip.
    const hiddenDrop = await tableManager.api.post(`/v1/namespace/${enc(['raw'])}/drop`, { behavior: 'Cascade' });
    expectProblem(hiddenDrop, 400, 1);
    same(
      hiddenDrop,
      await admin.post(`/v1/namespace/${enc(['raw' + ABSENT])}/drop`, { behavior: 'Cascade' }),
      'drop of a hidden namespace',
    );
    const skipped = await tableManager.api.post(`/v1/namespace/${enc(['raw'])}/drop`, { behavior: 'Cascade', mode: 'Skip' });
    assert.equal(skipped.status, (await admin.post(`/v1/namespace/${enc(['raw' + ABSENT])}/drop`, { mode: 'Skip' })).status);
    assert.equal(skipped.status, 204, skipped.text);
    assert.equal((await admin.post(`/v1/table/${enc(['prod', 'catalog', 'orders'])}/exists`, {})).status, 200, 'the cascade did not run');
    assert.equal((await admin.post(`/v1/table/${enc(['raw', 'events'])}/exists`, {})).status, 200);

    // Rename onto a hidden destination, and onto a visible one without create: the source stays.
    const rename = (api: Api, ns: string[], name: string) =>
      api.post(`/v1/table/${enc(['staging', 'victim'])}/rename`, { new_table_name: name, new_namespace_id: ns });
    const hiddenDest = await rename(builder, ['raw'], 'events');
    assert.equal(hiddenDest.status, 404, hiddenDest.text);
    same(hiddenDest, await rename(admin, ['raw' + ABSENT], 'events'), 'rename onto a hidden namespace');
    const managerOfVictim = await scoped('victimManager', 'write', [
      { privileges: ['manage'], on: { table: ['staging', 'victim'] } },
      { privileges: ['describe'], on: { namespace: ['prod'] } },
    ]);
    expectProblem(await rename(managerOfVictim.api, ['prod'], 'moved'), 403, 15, { msg: /needs 'create'/ });
    assert.equal((await admin.post(`/v1/table/${enc(['staging', 'victim'])}/exists`, {})).status, 200, 'not renamed');
    assert.equal((await admin.post(`/v1/table/${enc(['prod', 'moved'])}/exists`, {})).status, 404);

    // Clone from a hidden source, by id and by location: "not registered", as for a missing one (Lance data of the
    // database's folder that no table is registered at: a deregistered table's).
    await createTable(admin, ['staging', 'loose'], 1);
    const unregistered = (await admin.post(`/v1/table/${enc(['staging', 'loose'])}/describe`, {})).body.location as string;
    assert.equal((await admin.post(`/v1/table/${enc(['staging', 'loose'])}/deregister`, {})).status, 200);
    for (const source of ['raw$events', location]) {
      const hidden = await builder.post(`/v1/table/${enc(['staging', fresh('cl')])}/clone`, { source_location: source });
      assert.equal(hidden.status, 404, hidden.text);
      // (By location, the answer repeats the location the caller gave, as for one where nothing is registered.)
      if (source !== location) noLeak(hidden);
      const twinSource = source === location ? unregistered : `raw${ABSENT}$events`;
      const missing = await admin.post(`/v1/table/${enc(['staging', fresh('cl')])}/clone`, { source_location: twinSource });
      assert.notEqual(twinSource, source);
      same(hidden, JSON.parse(JSON.stringify(missing).split(twinSource).join(source)) as Reply, `clone from a hidden source ${source}`);
      if (source === location) assert.equal(hidden.body.detail, `no table of this database is registered at source_location ${location}`);
    }
    // A visible source without select (peek sees raw$logs only by describe): 403 when it may create the clone.
    const describer = await scoped('describer', 'write', [
      { privileges: ['describe'], on: { table: ['raw', 'events'] } },
      { privileges: ['create'], on: { namespace: ['staging'] } },
    ]);
    expectProblem(
      await describer.api.post(`/v1/table/${enc(['staging', fresh('cl')])}/clone`, { source_location: 'raw$events' }),
      403,
      15,
      {
        msg: /needs 'select'/,
      },
    );
    assert.deepEqual(
      (await admin.get(`/v1/namespace/${enc(['staging'])}/table/list`)).body.tables.filter((n: string) => n.startsWith('cl_')),
      [],
      'no clone was made',
    );

    // Replacing an existing table needs manage on it, not only create where it is: create mode=overwrite, register Overwrite.
    const creator = await scoped('creator', 'write', [{ privileges: ['create'], on: { namespace: ['raw'] } }]);
    const eventsNow = await countRows(['raw', 'events']);
    const eventsAt = (await admin.post(`/v1/table/${enc(['raw', 'events'])}/describe`, {})).body.location;
    const overwrite = await creator.api.request('POST', `/v1/table/${enc(['raw', 'events'])}/create?mode=overwrite`, arrowRows(0, 1), {
      'content-type': ARROW,
    });
    expectProblem(overwrite, 403, 15, { msg: /needs 'manage'/ });
    const register = await creator.api.post(`/v1/table/${enc(['raw', 'events'])}/register`, {
      location: unregistered.split('/').pop(),
      mode: 'Overwrite',
    });
    expectProblem(register, 403, 15, { msg: /needs 'manage'/ });
    assert.equal(await countRows(['raw', 'events']), eventsNow, 'not overwritten');
    assert.equal((await admin.post(`/v1/table/${enc(['raw', 'events'])}/describe`, {})).body.location, eventsAt, 'not re-registered');
    // The same key may create a new table there (the check is on what is replaced, not on the route).
    assert.equal((await creator.api.post(`/v1/table/${enc(['raw', fresh('new')])}/declare`, {})).status, 200);
  });

  it("jobs follow their table: listed, described and cancelled by who sees it; another's is not found", async () => {
    const run = await admin.post(`/v1/table/${enc(['prod', 'catalog', 'items'])}/maintenance/run`, { type: 'compact' });
    assert.equal(run.status, 200, run.text);
    const jobId = run.body.job_id as string;
    const ids = async (api: Api) => ((await api.post('/v1/jobs/list', {})).body.jobs as Json[]).map((j) => j.job_id as string);
    // The query key sees prod$catalog: the job is listed and described; it holds no manage there: cancel is 403.
    assert.ok((await ids(keys.query.api)).includes(jobId));
    assert.equal((await keys.query.api.post('/v1/jobs/describe', { job_id: jobId })).status, 200);
    expectProblem(await keys.query.api.post('/v1/jobs/cancel', { job_id: jobId }), 403, 15, { msg: /needs 'manage'/ });
    // The builder (staging only) cannot see it: not listed, and described as an unknown job would be.
    assert.ok(!(await ids(keys.builder.api)).includes(jobId));
    const hidden = await keys.builder.api.post('/v1/jobs/describe', { job_id: jobId });
    const unknown = await keys.builder.api.post('/v1/jobs/describe', { job_id: ZERO_UUID });
    assert.equal(hidden.status, 404, hidden.text);
    assert.deepEqual(
      [hidden.body.code, hidden.body.detail.replace(jobId, 'ID')],
      [unknown.body.code, unknown.body.detail.replace(ZERO_UUID, 'ID')],
    );
    const hiddenCancel = await keys.builder.api.post('/v1/jobs/cancel', { job_id: jobId });
    assert.equal(hiddenCancel.status, 404, hiddenCancel.text);
  });

  it('refused requests are in the audit trail as request.refused: who, which operation, which object, why', async () => {
    const events = async () => {
      const r = await op.get(`/admin/v1/databases/${t.name}/audit?limit=10000`);
      assert.equal(r.status, 200, r.text);
      return (r.body.events as Json[]).filter((e) => e.action === 'request.refused');
    };
    // One more of each, after which the aggregated records must have been flushed.
    const hidden = await keys.query.api.post(`/v1/table/${enc(['raw', 'events'])}/describe`, {});
    assert.equal(hidden.status, 404);
    const forbidden = await keys.query.api.request('POST', `/v1/table/${enc(['prod', 'catalog', 'items'])}/insert`, arrowRows(0, 1), {
      'content-type': ARROW,
    });
    assert.equal(forbidden.status, 403);
    const found = await eventually(
      async () => {
        const all = await events();
        const mine = all.filter((e) => e.actor === `key:${keys.query.id}`);
        const h = mine.find((e) => e.target === 'table raw$events' && e.details.operation === 'describe' && e.details.status === 404);
        const f = mine.find(
          (e) => e.target === 'table prod$catalog$items' && e.details.status === 403 && e.details.reason === 'needs insert',
        );
        const renamed = all.find(
          (e) => e.actor === `key:${keys.builder.id}` && e.target === 'table raw$events' && e.details.reason === 'needs create',
        );
        return h && f && renamed ? { h, f, renamed, all } : undefined;
      },
      60,
      100,
    );
    assert.equal(found.h.details.reason, 'needs describe');
    assert.ok(found.h.details.count >= 1 && typeof found.h.details.first_at === 'string', JSON.stringify(found.h));
    // The matrix called many routes on the same object with the same key: aggregated per operation, not per request.
    const perKey = found.all.filter((e) => e.actor === `key:${keys.query.id}`);
    assert.ok(perKey.length > 20, `${perKey.length} distinct refusals of the query key`);
    assert.ok(!JSON.stringify(found.all).includes(keys.query.secret), 'no secret in the trail');
    // A 403 from a database-wide route names the database.
    expectProblem(await keys.query.api.post('/v1/transaction/some-id/describe', {}), 403, 15);
    await eventually(async () =>
      (await events()).find(
        (e) =>
          e.actor === `key:${keys.query.id}` &&
          e.target === 'database' &&
          e.details.reason === 'needs describe on the database' &&
          e.details.status === 403,
      ),
    );
  });

  it('key lifecycle: grants above the role are a 400; PATCH narrows, widens and resets; rotate keeps them; expiry still ends the key', async () => {
    for (const bad of [
      { role: 'read', grants: [{ privileges: ['insert'], on: { table: ['raw', 'events'] } }] },
      { role: 'write', grants: [{ privileges: ['admin'], on: { database: true } }] },
      { role: 'admin', grants: [{ privileges: ['admin'], on: { namespace: ['raw'] } }] },
      { role: 'read', grants: [{ privileges: ['select'], on: { table: [] } }] },
      { role: 'read', grants: [{ privileges: ['fly'], on: { database: true } }] },
      { role: 'read', grants: [] },
    ]) {
      expectProblem(await op.post(keysUrl(), bad), 400, 13, { what: JSON.stringify(bad) });
    }
    const k = await scoped('patchy', 'read', [{ privileges: ['select'], on: { namespace: ['prod', 'catalog'] } }]);
    const items = () => k.api.post(`/v1/table/${enc(['prod', 'catalog', 'items'])}/count_rows`, {});
    const events = () => k.api.post(`/v1/table/${enc(['raw', 'events'])}/count_rows`, {});
    assert.equal((await items()).status, 200);
    expectProblem(await events(), 404, 1, { msg: 'raw' });
    const patch = (grants: unknown) => op.request('PATCH', `${keysUrl()}/${k.id}`, { grants });
    expectProblem(await patch([{ privileges: ['insert'], on: { database: true } }]), 400, 13);
    assert.equal((await items()).status, 200, 'a refused PATCH changes nothing');

    const narrowed = [{ privileges: ['select'], on: { table: ['raw', 'events'] } }];
    const p1 = await patch(narrowed);
    assert.equal(p1.status, 200, p1.text);
    assert.deepEqual(p1.body.grants, narrowed);
    assert.equal((await events()).status, 200);
    expectProblem(await items(), 404, 1, { msg: 'prod' });
    const listed = (await op.get(keysUrl())).body.api_keys.find((x: Json) => x.id === k.id);
    assert.deepEqual(listed.grants, narrowed);

    const p2 = await patch(null);
    assert.equal(p2.status, 200, p2.text);
    assert.equal(p2.body.grants, null);
    assert.equal((await items()).status, 200);
    assert.equal((await events()).status, 200);
    expectProblem(await k.api.post(`/v1/table/${enc(['raw', 'events'])}/delete`, { predicate: 'id < 0' }), 403, 15, {
      msg: /needs 'write'/,
    });

    const widened = [
      { privileges: ['select'], on: { namespace: ['prod'] } },
      { privileges: ['describe'], on: { table: ['raw', 'logs'] } },
    ];
    assert.equal((await patch(widened)).status, 200);
    assert.equal((await items()).status, 200);
    expectProblem(await events(), 404, 4, { msg: 'raw$events' });

    const audit = (await op.get(`/admin/v1/databases/${t.name}/audit?limit=10000`)).body.events as Json[];
    const updates = audit.filter((e) => e.action === 'api_key.update' && e.details?.key_id === k.id);
    assert.deepEqual(updates.map((e) => e.details.changed.grants).reverse(), [
      { from: [{ privileges: ['select'], on: { namespace: ['prod', 'catalog'] } }], to: narrowed },
      { from: narrowed, to: null },
      { from: null, to: widened },
    ]);
    const issuedEvent = audit.find((e) => e.action === 'api_key.issue' && e.details?.key_id === k.id);
    assert.deepEqual(issuedEvent?.details.grants, [{ privileges: ['select'], on: { namespace: ['prod', 'catalog'] } }]);

    // Rotate: the new key carries the grants and is narrowed the same way.
    const rotated = await op.post(`${keysUrl()}/${k.id}/rotate`, {});
    assert.equal(rotated.status, 201, rotated.text);
    assert.deepEqual(rotated.body.grants, widened);
    const newApi = new Api(gw.url, { 'x-api-key': rotated.body.api_key, 'x-service-database': t.name });
    assert.equal((await newApi.post(`/v1/table/${enc(['prod', 'catalog', 'items'])}/count_rows`, {})).status, 200);
    expectProblem(await newApi.post(`/v1/table/${enc(['raw', 'events'])}/count_rows`, {}), 404, 4);

    // Expiry: a key with grants expires like any other.
    const expiring = await op.post(keysUrl(), {
      role: 'read',
      grants: widened,
      expires_at: new Date(Date.now() + 2500).toISOString(),
    });
    assert.equal(expiring.status, 201, expiring.text);
    const ex = new Api(gw.url, { 'x-api-key': expiring.body.api_key, 'x-service-database': t.name });
    assert.equal((await ex.post(`/v1/table/${enc(['prod', 'catalog', 'items'])}/count_rows`, {})).status, 200);
    const gone = await eventually(
      async () => {
        const r = await ex.post(`/v1/table/${enc(['prod', 'catalog', 'items'])}/count_rows`, {});
        return r.status === 401 ? r : undefined;
      },
      100,
      100,
    );
    expectProblem(gone, 401, 16);
  });

  it('an OAuth2 token with a grants claim is narrowed the same way; a malformed claim is a 401', async () => {
    const bearer = async (claims: Json) =>
      new Api(gw.url, {
        authorization: `Bearer ${await issuer.token({ sub: 'svc', databases: [t.name], ...claims })}`,
        'x-service-database': t.name,
      });
    const items = ['prod', 'catalog', 'items'];
    const q = await bearer({ scope: 'write', lance_grants: [{ privileges: ['select'], on: { namespace: ['prod', 'catalog'] } }] });
    assert.equal((await q.post(`/v1/table/${enc(items)}/count_rows`, {})).status, 200);
    expectProblem(await q.post(`/v1/table/${enc(['raw', 'events'])}/describe`, {}), 404, 1, { msg: 'raw' });
    expectProblem(await q.request('POST', `/v1/table/${enc(items)}/insert`, arrowRows(0, 1), { 'content-type': ARROW }), 403, 15, {
      msg: /needs 'insert'/,
    });
    assert.deepEqual((await q.get('/v1/table')).body.tables, ['prod$catalog$items', 'prod$catalog$orders']);
    // A privilege above the scope's role is not held: a read token's insert grant gives nothing (the table is hidden).
    const over = await bearer({ scope: 'read', lance_grants: [{ privileges: ['insert'], on: { table: ['raw', 'events'] } }] });
    const before = await countRows(['raw', 'events']);
    expectProblem(
      await over.request('POST', `/v1/table/${enc(['raw', 'events'])}/insert`, arrowRows(0, 1), { 'content-type': ARROW }),
      404,
      1,
    );
    assert.equal(await countRows(['raw', 'events']), before);
    const mixed = await bearer({ scope: 'read', lance_grants: [{ privileges: ['insert', 'select'], on: { table: ['raw', 'events'] } }] });
    assert.equal((await mixed.post(`/v1/table/${enc(['raw', 'events'])}/count_rows`, {})).status, 200);
    expectProblem(
      await mixed.request('POST', `/v1/table/${enc(['raw', 'events'])}/insert`, arrowRows(0, 1), { 'content-type': ARROW }),
      403,
      15,
    );
    for (const claim of [
      'nope',
      [{ privileges: ['fly'], on: { database: true } }],
      [{ privileges: ['select'], on: { galaxy: true } }],
      [],
    ]) {
      expectProblem(await (await bearer({ scope: 'read', lance_grants: claim })).get('/v1/table'), 401, 16, {
        what: JSON.stringify(claim),
      });
    }
    // Without the claim the token has its scope's role on the whole database.
    assert.equal((await (await bearer({ scope: 'read' })).post(`/v1/table/${enc(['raw', 'events'])}/count_rows`, {})).status, 200);
  });
});

describe(`grants: vended storage credentials follow the privilege on the table [${kind}]`, () => {
  let s3: LocalS3;
  let sts: StsStub;
  let gw: TestGateway;

  before(async () => {
    s3 = await useLocalS3();
    sts = await StsStub.start();
    const prefix = freshPrefix();
    gw = await startGateway(kind, {
      STORAGE_PROFILES: JSON.stringify({
        default: { root: `s3://${TEST_BUCKET}/${prefix}`, options: s3.options },
        sts: stsProfile(`s3://${TEST_BUCKET}/${prefix}-sts`, s3, sts),
      }),
    });
  });
  after(async () => {
    await gw?.close();
    await sts?.close();
    await s3?.release();
  });

  it('read-write with insert/modify/manage (or create when creating), read-only with select, nothing with describe alone', async () => {
    const op = operator(gw);
    const name = `vend_${Date.now().toString(36)}`;
    assert.equal((await op.post('/admin/v1/databases', { name, storage_profile: 'sts' })).status, 201);
    const keyWith = async (role: string, grants: Grant[]) => {
      const r = await op.post(`/admin/v1/databases/${name}/api-keys`, { role, grants });
      assert.equal(r.status, 201, r.text);
      return new Api(gw.url, { 'x-api-key': r.body.api_key, 'x-service-database': name });
    };
    const owner = await keyWith('write', [{ privileges: ['create', 'manage'], on: { namespace: ['raw'] } }]);
    const admin = await keyWith('admin', [{ privileges: ['admin', 'create'], on: { database: true } }]);
    assert.equal((await admin.post(`/v1/namespace/raw/create`, {})).status, 200);
    /** What a vended answer allows: write, read, or none (no storage_options). */
    const accessOf = (r: Reply): 'write' | 'read' | 'none' => {
      assert.equal(r.status, 200, r.text);
      const so = r.body.storage_options as Record<string, string> | undefined;
      if (!so) return 'none';
      const i = sts.issued.findIndex((c) => c.sessionToken === so.aws_session_token);
      assert.ok(i >= 0, 'an STS credential');
      const actions = sts.policy(i).Statement.flatMap((s) => [s.Action].flat()) as string[];
      const session = sts.requests[i].params.RoleSessionName;
      const write = actions.includes('s3:PutObject');
      assert.equal(session.startsWith(write ? 'lance-gw-w-' : 'lance-gw-r-'), true, session);
      return write ? 'write' : 'read';
    };
    // Creating: the key that creates in raw gets read-write credentials for the table it declares.
    assert.equal(accessOf(await owner.post(`/v1/table/${enc(['raw', 'events'])}/declare`, {})), 'write');
    const describeWith = async (grants: Grant[], role = 'write') =>
      accessOf(await (await keyWith(role, grants)).post(`/v1/table/${enc(['raw', 'events'])}/describe`, {}));
    const on = { table: ['raw', 'events'] };
    assert.equal(await describeWith([{ privileges: ['describe'], on }]), 'none');
    assert.equal(await describeWith([{ privileges: ['select'], on }], 'read'), 'read');
    assert.equal(await describeWith([{ privileges: ['select'], on: { namespace: ['raw'] } }]), 'read');
    assert.equal(await describeWith([{ privileges: ['insert'], on }]), 'write');
    assert.equal(await describeWith([{ privileges: ['modify'], on }]), 'write');
    assert.equal(await describeWith([{ privileges: ['manage'], on: { namespace: ['raw'] } }]), 'write');
    assert.equal(await describeWith([{ privileges: ['create'], on }]), 'none', 'create on an existing table vends nothing');
    assert.equal(await describeWith([{ privileges: ['select'], on: { database: true } }]), 'read');
    assert.equal(accessOf(await owner.post(`/v1/table/${enc(['raw', 'events'])}/describe`, { vend_credentials: false })), 'none');
  });
});
