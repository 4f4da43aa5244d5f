import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  Api,
  eventually,
  forEachCatalog,
  idPath,
  newTenant,
  rawRequest,
  Reply,
  startGateway,
  TEST_STORAGE,
  TestGateway,
} from './helpers/gateway';
import { ERROR_FIELDS, expectProblem } from './helpers/assertions';
import { writeTable } from './helpers/lance';
import * as stored from './helpers/stored';

/**
 * Namespace operations of the REST contract (docs/rest-contract.md §4.1-4.4, §7, §8): create / list / describe / exists / drop,
 * identifiers and delimiters, error bodies, concurrency, tenancy and BASE_PATH.
 */

const ns = (...parts: string[]) => `/v1/namespace/${idPath(...parts)}`;
const tbl = (...parts: string[]) => `/v1/table/${idPath(...parts)}`;

async function create(api: Api, parts: string[], body: Record<string, unknown> = {}) {
  const r = await api.post(`${ns(...parts)}/create`, body);
  assert.equal(r.status, 200, `create ${parts.join('$')}: ${r.text}`);
  return r;
}

async function declare(api: Api, parts: string[]): Promise<string> {
  const r = await api.post(`${tbl(...parts)}/declare`, {});
  assert.equal(r.status, 200, `declare ${parts.join('$')}: ${r.text}`);
  assert.equal(typeof r.body.location, 'string');
  return r.body.location as string;
}

/**
 * Declares a table that has something on storage, for tests about what happens to table folders: locally the
 * declared (empty) folder the gateway makes; on an object store, where a declared table has no objects (there are
 * no empty folders), a row written there the way a namespace-mode client would.
 */
async function declareStored(api: Api, parts: string[]): Promise<string> {
  const loc = await declare(api, parts);
  if (TEST_STORAGE === 's3') await writeTable(loc, [{ id: 1 }]);
  assert.ok(await stored.exists(loc), loc);
  return loc;
}

const gone = async (locs: string[]) => (await Promise.all(locs.map(stored.exists))).every((e) => !e);

/** Every child name of a namespace, following page tokens; checks each page against `limit`. */
async function listAll(api: Api, parts: string[], limit?: number): Promise<{ names: string[]; pages: number }> {
  const names: string[] = [];
  let token: string | undefined;
  let pages = 0;
  for (;;) {
    const q = new URLSearchParams();
    if (limit !== undefined) q.set('limit', String(limit));
    if (token !== undefined) q.set('page_token', token);
    const r = await api.get(`${ns(...parts)}/list?${q}`);
    assert.equal(r.status, 200, r.text);
    assert.ok(Array.isArray(r.body.namespaces));
    if (limit !== undefined) assert.ok(r.body.namespaces.length <= limit, `page of ${r.body.namespaces.length} > ${limit}`);
    names.push(...r.body.namespaces);
    pages++;
    assert.ok(pages < 1000, 'pagination does not terminate');
    token = r.body.page_token;
    if (token === undefined || token === null || token === '') break;
  }
  return { names, pages };
}

async function allTables(api: Api): Promise<string[]> {
  const r = await api.get('/v1/table');
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.page_token ?? undefined, undefined);
  return r.body.tables;
}

forEachCatalog('namespaces', (kind) => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway(kind);
  });
  after(() => gw.close());

  describe('create', () => {
    it('returns the stored properties plus a created_at ISO timestamp', async () => {
      const { api } = await newTenant(gw);
      const r = await create(api, ['sales'], { properties: { owner: 'ana', tier: 'gold' } });
      assert.equal(r.body.properties.owner, 'ana');
      assert.equal(r.body.properties.tier, 'gold');
      const createdAt = r.body.properties.created_at;
      assert.equal(typeof createdAt, 'string');
      assert.equal(new Date(createdAt).toISOString(), createdAt);
      assert.deepEqual(Object.keys(r.body.properties).sort(), ['created_at', 'owner', 'tier']);

      const d = await api.post(`${ns('sales')}/describe`, {});
      assert.equal(d.status, 200);
      assert.deepEqual(d.body.properties, r.body.properties);
    });

    it('without properties returns only created_at', async () => {
      const { api } = await newTenant(gw);
      const r = await create(api, ['plain']);
      assert.deepEqual(Object.keys(r.body.properties), ['created_at']);
    });

    it('mode Create on an existing namespace is 409 with code 2 and a §7 body', async () => {
      const { api } = await newTenant(gw);
      await create(api, ['dup']);
      const r = await api.post(`${ns('dup')}/create`, { mode: 'Create' });
      expectProblem(r, 409, 2);
      assert.equal(r.body.type, '/errors/conflict');
      assert.equal(r.body.title, 'The namespace has been concurrently modified');
      // The default mode is Create as well.
      expectProblem(await api.post(`${ns('dup')}/create`, {}), 409, 2);
    });

    it('mode ExistOk keeps the existing namespace and its properties', async () => {
      const { api } = await newTenant(gw);
      const first = await create(api, ['keep'], { properties: { v: '1' } });
      const again = await create(api, ['keep'], { mode: 'ExistOk', properties: { v: '2', extra: 'x' } });
      assert.deepEqual(again.body.properties, first.body.properties);
      assert.equal(again.body.properties.v, '1');
      assert.equal(again.body.properties.extra, undefined);
      const d = await api.post(`${ns('keep')}/describe`, {});
      assert.equal(d.body.properties.v, '1');
    });

    it('mode ExistOk on a new namespace creates it', async () => {
      const { api } = await newTenant(gw);
      const r = await create(api, ['fresh'], { mode: 'exist_ok', properties: { a: 'b' } });
      assert.equal(r.body.properties.a, 'b');
      assert.equal((await api.post(`${ns('fresh')}/exists`, {})).status, 200);
    });

    it('mode Overwrite replaces the properties and removes children and tables', async () => {
      const { api } = await newTenant(gw);
      await create(api, ['ow'], { properties: { old: 'yes' } });
      await create(api, ['ow', 'child']);
      await create(api, ['ow', 'child', 'grand']);
      const loc1 = await declareStored(api, ['ow', 't1']);
      const loc2 = await declareStored(api, ['ow', 'child', 't2']);

      const r = await create(api, ['ow'], { mode: 'Overwrite', properties: { new: 'yes' } });
      assert.equal(r.body.properties.new, 'yes');
      assert.equal(r.body.properties.old, undefined);

      const d = await api.post(`${ns('ow')}/describe`, {});
      assert.equal(d.status, 200);
      assert.equal(d.body.properties.new, 'yes');
      assert.equal(d.body.properties.old, undefined);
      assert.deepEqual((await api.get(`${ns('ow')}/list`)).body.namespaces, []);
      expectProblem(await api.post(`${ns('ow', 'child')}/describe`, {}), 404, 1);
      expectProblem(await api.post(`${ns('ow', 'child', 'grand')}/exists`, {}), 404, 1);
      assert.deepEqual((await api.get(`${ns('ow')}/table/list`)).body.tables, []);
      assert.deepEqual(await allTables(api), []);
      assert.notEqual((await api.post(`${tbl('ow', 't1')}/exists`, {})).status, 200);
      await eventually(() => gone([loc1, loc2]));
    });

    it('mode Overwrite on a new namespace creates it', async () => {
      const { api } = await newTenant(gw);
      const r = await create(api, ['brandnew'], { mode: 'overwrite', properties: { k: 'v' } });
      assert.equal(r.body.properties.k, 'v');
      assert.equal((await api.post(`${ns('brandnew')}/exists`, {})).status, 200);
    });

    it('accepts modes case-insensitively in PascalCase and snake_case', async () => {
      const { api } = await newTenant(gw);
      await create(api, ['m'], { properties: { p: '1' } });
      for (const mode of ['exist_ok', 'EXISTOK', 'ExistOk', 'existok', 'Exist_Ok']) {
        const r = await api.post(`${ns('m')}/create`, { mode, properties: { p: '2' } });
        assert.equal(r.status, 200, `${mode}: ${r.text}`);
        assert.equal(r.body.properties.p, '1', mode);
      }
      for (const mode of ['create', 'CREATE', 'Create']) {
        expectProblem(await api.post(`${ns('m')}/create`, { mode }), 409, 2, { what: mode });
      }
      for (const [i, mode] of ['overwrite', 'OVERWRITE', 'Overwrite'].entries()) {
        const r = await api.post(`${ns('m')}/create`, { mode, properties: { p: `o${i}` } });
        assert.equal(r.status, 200, `${mode}: ${r.text}`);
        assert.equal(r.body.properties.p, `o${i}`, mode);
      }
    });

    it('rejects an unknown mode with 400 code 13 and creates nothing', async () => {
      const { api } = await newTenant(gw);
      for (const mode of ['Replace', 'exist-ok', '', 'createx']) {
        expectProblem(await api.post(`${ns('bad')}/create`, { mode }), 400, 13, { what: JSON.stringify(mode) });
      }
      expectProblem(await api.post(`${ns('bad')}/create`, { mode: 7 }), 400, 13);
      expectProblem(await api.post(`${ns('bad')}/exists`, {}), 404, 1);
    });

    it('fails with 404 code 1 when the parent is missing', async () => {
      const { api } = await newTenant(gw);
      expectProblem(await api.post(`${ns('nope', 'child')}/create`, {}), 404, 1);
      expectProblem(await api.post(`${ns('nope', 'child')}/create`, { mode: 'ExistOk' }), 404, 1);
      expectProblem(await api.post(`${ns('nope')}/exists`, {}), 404, 1);
      await create(api, ['nope']);
      await create(api, ['nope', 'child']);
      expectProblem(await api.post(`${ns('nope', 'x', 'y')}/create`, {}), 404, 1);
    });

    it('creates nested namespaces several levels deep', async () => {
      const { api } = await newTenant(gw);
      const path: string[] = [];
      for (const p of ['l1', 'l2', 'l3', 'l4', 'l5']) {
        path.push(p);
        await create(api, [...path]);
      }
      assert.equal((await api.post(`${ns(...path)}/exists`, {})).status, 200);
      assert.deepEqual((await api.get(`${ns('l1', 'l2', 'l3')}/list`)).body.namespaces, ['l4']);
    });

    it('root: mode Create is 409 code 2, ExistOk is 200', async () => {
      const { api } = await newTenant(gw);
      expectProblem(await api.post('/v1/namespace/%24/create', {}), 409, 2);
      expectProblem(await api.post('/v1/namespace/%24/create', { mode: 'Create' }), 409, 2);
      const ok = await api.post('/v1/namespace/%24/create', { mode: 'ExistOk' });
      assert.equal(ok.status, 200, ok.text);
      assert.equal(typeof ok.body.properties, 'object');
    });

    it('requires string-to-string properties (400 code 13)', async () => {
      const { api } = await newTenant(gw);
      for (const properties of [{ a: 1 }, { a: true }, { a: null }, { a: { b: 'c' } }, ['x'], 'str']) {
        expectProblem(await api.post(`${ns('props')}/create`, { properties }), 400, 13, { what: JSON.stringify(properties) });
      }
      expectProblem(await api.post(`${ns('props')}/exists`, {}), 404, 1);
      const ok = await create(api, ['props'], { properties: { a: '1', empty: '' } });
      assert.equal(ok.body.properties.empty, '');
    });
  });

  describe('error bodies', () => {
    it('carry exactly the §7 fields, code and error; instance is the x-request-id', async () => {
      const { api } = await newTenant(gw);
      const cases: Reply[] = [
        await api.post(`${ns('missing')}/describe`, {}),
        await api.post(`${ns('a b')}/create`, {}),
        await api.post(`${ns('missing')}/drop`, {}),
        await api.get(`${ns('missing')}/list`),
      ];
      await create(api, ['c']);
      cases.push(await api.post(`${ns('c')}/create`, {}));
      const ids = new Set<string>();
      for (const r of cases) {
        assert.ok(r.status >= 400, r.text);
        assert.deepEqual(Object.keys(r.body).sort(), ERROR_FIELDS);
        assert.equal(r.body.status, r.status);
        assert.equal(r.body.instance, r.headers.get('x-request-id'));
        assert.equal(typeof r.body.error, 'string');
        assert.ok(Number.isInteger(r.body.code));
        assert.match(r.headers.get('content-type') ?? '', /application\/json/);
        ids.add(r.body.instance);
      }
      assert.equal(ids.size, cases.length, 'request ids are distinct');
    });

    it('echo a client-sent x-request-id', async () => {
      const { api } = await newTenant(gw);
      const rid = 'client-req.42:abc';
      const r = await api.post(`${ns('missing')}/describe`, {}, { 'x-request-id': rid });
      expectProblem(r, 404, 1);
      assert.equal(r.headers.get('x-request-id'), rid);
      assert.equal(r.body.instance, rid);
      const ok = await api.post(`${ns('$')}/describe`, {}, { 'x-request-id': rid });
      assert.equal(ok.headers.get('x-request-id'), rid);
    });
  });

  describe('list', () => {
    it('lists direct children only, sorted', async () => {
      const { api } = await newTenant(gw);
      await create(api, ['p']);
      for (const c of ['zeta', 'alpha', 'mid', 'beta']) await create(api, ['p', c]);
      await create(api, ['p', 'alpha', 'deep']);
      await create(api, ['other']);
      const r = await api.get(`${ns('p')}/list`);
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body.namespaces, ['alpha', 'beta', 'mid', 'zeta']);
      assert.equal(r.body.page_token ?? undefined, undefined);
      assert.deepEqual((await api.get(`${ns('p', 'alpha')}/list`)).body.namespaces, ['deep']);
      assert.deepEqual((await api.get(`${ns('p', 'zeta')}/list`)).body.namespaces, []);
    });

    it('the root lists the top-level namespaces', async () => {
      const { api } = await newTenant(gw);
      assert.deepEqual((await api.get(`${ns()}/list`)).body.namespaces, []);
      await create(api, ['top2']);
      await create(api, ['top1']);
      await create(api, ['top1', 'inner']);
      const r = await api.get('/v1/namespace/%24/list');
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body.namespaces, ['top1', 'top2']);
    });

    it('paginates with limit and page_token: every child exactly once, pages within the limit', async () => {
      const { api } = await newTenant(gw);
      await create(api, ['pg']);
      const children = Array.from({ length: 11 }, (_, i) => `c${String(i).padStart(2, '0')}`);
      await Promise.all(children.map((c) => create(api, ['pg', c])));
      for (const limit of [1, 3, 4, 11, 12, 100]) {
        const { names, pages } = await listAll(api, ['pg'], limit);
        assert.deepEqual(names, children, `limit ${limit}`);
        assert.equal(new Set(names).size, names.length);
        assert.ok(pages >= Math.ceil(children.length / limit), `limit ${limit}: ${pages} pages`);
      }
      const first = await api.get(`${ns('pg')}/list?limit=4`);
      assert.equal(first.body.namespaces.length, 4);
      assert.equal(typeof first.body.page_token, 'string');
      assert.ok(first.body.page_token.length > 0);
    });

    it('limit=0 returns no names and no token', async () => {
      const { api } = await newTenant(gw);
      await create(api, ['z']);
      await create(api, ['z', 'a']);
      const r = await api.get(`${ns('z')}/list?limit=0`);
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body.namespaces, []);
      assert.equal(r.body.page_token ?? undefined, undefined);
    });

    it('rejects a page_token it did not issue (400)', async () => {
      const { api } = await newTenant(gw);
      await create(api, ['g']);
      for (const t of ['garbage!!', 'bm90LWpzb24', Buffer.from('42').toString('base64url')]) {
        const r = await api.get(`${ns('g')}/list?page_token=${encodeURIComponent(t)}`);
        expectProblem(r, 400, 13, { what: t });
      }
      expectProblem(await api.get(`${ns('g')}/list?limit=abc`), 400, 13);
    });

    it('a missing parent is 404 code 1', async () => {
      const { api } = await newTenant(gw);
      expectProblem(await api.get(`${ns('ghost')}/list`), 404, 1);
      await create(api, ['real']);
      expectProblem(await api.get(`${ns('real', 'ghost')}/list`), 404, 1);
    });
  });

  describe('describe and exists', () => {
    it('describe returns properties; root has empty properties; missing is 404 code 1', async () => {
      const { api } = await newTenant(gw);
      await create(api, ['d'], { properties: { x: 'y' } });
      const r = await api.post(`${ns('d')}/describe`, {});
      assert.equal(r.status, 200);
      assert.equal(r.body.properties.x, 'y');
      assert.equal(typeof r.body.properties.created_at, 'string');
      const root = await api.post('/v1/namespace/%24/describe', {});
      assert.equal(root.status, 200, root.text);
      assert.deepEqual(root.body.properties, {});
      expectProblem(await api.post(`${ns('d', 'missing')}/describe`, {}), 404, 1);
      expectProblem(await api.post(`${ns('missing')}/describe`, {}), 404, 1);
    });

    it('exists answers 200 with an empty body, or 404 code 1', async () => {
      const { api } = await newTenant(gw);
      await create(api, ['e']);
      const r = await api.post(`${ns('e')}/exists`, {});
      assert.equal(r.status, 200);
      assert.equal(r.text, '');
      const root = await api.post(`${ns()}/exists`, {});
      assert.equal(root.status, 200);
      expectProblem(await api.post(`${ns('e2')}/exists`, {}), 404, 1);
      expectProblem(await api.post(`${ns('e', 'sub')}/exists`, {}), 404, 1);
    });
  });

  describe('drop', () => {
    it('mode Fail (default) on a missing namespace is 400 with code 1', async () => {
      const { api } = await newTenant(gw);
      expectProblem(await api.post(`${ns('gone')}/drop`, {}), 400, 1);
      expectProblem(await api.post(`${ns('gone')}/drop`, { mode: 'Fail' }), 400, 1);
      expectProblem(await api.post(`${ns('gone')}/drop`, { mode: 'FAIL', behavior: 'Cascade' }), 400, 1);
    });

    it('mode Skip on a missing namespace is 204 with no body', async () => {
      const { api } = await newTenant(gw);
      for (const mode of ['Skip', 'skip', 'SKIP']) {
        const r = await api.post(`${ns('gone')}/drop`, { mode });
        assert.equal(r.status, 204, `${mode}: ${r.text}`);
        assert.equal(r.text, '');
      }
      const c = await api.post(`${ns('gone')}/drop`, { mode: 'Skip', behavior: 'Cascade' });
      assert.equal(c.status, 204);
    });

    it('drops an empty namespace (200); it is gone afterwards', async () => {
      const { api } = await newTenant(gw);
      await create(api, ['empty']);
      await create(api, ['keep']);
      const r = await api.post(`${ns('empty')}/drop`, {});
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.transaction_id, undefined);
      expectProblem(await api.post(`${ns('empty')}/describe`, {}), 404, 1);
      assert.deepEqual((await api.get(`${ns()}/list`)).body.namespaces, ['keep']);
      // mode Skip on an existing namespace drops it too.
      const s = await api.post(`${ns('keep')}/drop`, { mode: 'Skip' });
      assert.equal(s.status, 200, s.text);
      expectProblem(await api.post(`${ns('keep')}/exists`, {}), 404, 1);
    });

    it('Restrict (default) refuses a namespace with a child namespace: 409 code 3, nothing dropped', async () => {
      const { api } = await newTenant(gw);
      await create(api, ['r'], { properties: { k: 'v' } });
      await create(api, ['r', 'kid']);
      expectProblem(await api.post(`${ns('r')}/drop`, {}), 409, 3);
      expectProblem(await api.post(`${ns('r')}/drop`, { behavior: 'Restrict' }), 409, 3);
      expectProblem(await api.post(`${ns('r')}/drop`, { behavior: 'RESTRICT', mode: 'Skip' }), 409, 3);
      const d = await api.post(`${ns('r')}/describe`, {});
      assert.equal(d.status, 200);
      assert.equal(d.body.properties.k, 'v');
      assert.deepEqual((await api.get(`${ns('r')}/list`)).body.namespaces, ['kid']);
    });

    it('Restrict refuses a namespace holding a declared table: 409 code 3, table kept', async () => {
      const { api } = await newTenant(gw);
      await create(api, ['rt']);
      const loc = await declareStored(api, ['rt', 'tab']);
      expectProblem(await api.post(`${ns('rt')}/drop`, { behavior: 'restrict' }), 409, 3);
      assert.equal((await api.post(`${ns('rt')}/exists`, {})).status, 200);
      assert.equal((await api.post(`${tbl('rt', 'tab')}/exists`, {})).status, 200);
      assert.deepEqual(await allTables(api), ['rt$tab']);
      assert.ok(await stored.exists(loc));
    });

    it('Cascade drops the namespace, its descendants, their tables and the table folders', async () => {
      const { api } = await newTenant(gw);
      await create(api, ['a']);
      await create(api, ['a', 'b']);
      await create(api, ['a', 'b', 'c']);
      await create(api, ['a', 'b2']);
      await create(api, ['ab']); // a sibling whose name starts like the dropped one
      await create(api, ['a2']);
      const locs = [
        await declareStored(api, ['a', 't0']),
        await declareStored(api, ['a', 'b', 't1']),
        await declareStored(api, ['a', 'b', 'c', 't2']),
      ];
      const keptLoc = await declareStored(api, ['ab', 'keep']);
      const keptLoc2 = await declareStored(api, ['a2', 'keep']);

      const r = await api.post(`${ns('a')}/drop`, { behavior: 'Cascade' });
      assert.equal(r.status, 200, r.text);

      for (const p of [['a'], ['a', 'b'], ['a', 'b', 'c'], ['a', 'b2']]) {
        expectProblem(await api.post(`${ns(...p)}/describe`, {}), 404, 1, { what: p.join('$') });
      }
      assert.deepEqual((await api.get(`${ns()}/list`)).body.namespaces, ['a2', 'ab']);
      assert.deepEqual(await allTables(api), ['a2$keep', 'ab$keep']);
      await eventually(() => gone(locs));
      assert.ok(await stored.exists(keptLoc));
      assert.ok(await stored.exists(keptLoc2));

      // Re-creating the namespace yields no old children and no old tables.
      await create(api, ['a']);
      assert.deepEqual((await api.get(`${ns('a')}/list`)).body.namespaces, []);
      assert.deepEqual((await api.get(`${ns('a')}/table/list`)).body.tables, []);
      await create(api, ['a', 'b']);
      assert.deepEqual((await api.get(`${ns('a', 'b')}/list`)).body.namespaces, []);
      assert.deepEqual((await api.get(`${ns('a', 'b')}/table/list`)).body.tables, []);
      assert.deepEqual(await allTables(api), ['a2$keep', 'ab$keep']);
    });

    it('Cascade accepts snake_case / upper case and drops an empty namespace', async () => {
      const { api } = await newTenant(gw);
      for (const behavior of ['cascade', 'CASCADE', 'Cascade']) {
        await create(api, ['cx']);
        await create(api, ['cx', 'in']);
        const r = await api.post(`${ns('cx')}/drop`, { behavior });
        assert.equal(r.status, 200, `${behavior}: ${r.text}`);
        expectProblem(await api.post(`${ns('cx')}/exists`, {}), 404, 1);
      }
    });

    it('rejects unknown drop modes and behaviors (400 code 13)', async () => {
      const { api } = await newTenant(gw);
      await create(api, ['u']);
      expectProblem(await api.post(`${ns('u')}/drop`, { mode: 'Force' }), 400, 13);
      expectProblem(await api.post(`${ns('u')}/drop`, { behavior: 'Recursive' }), 400, 13);
      assert.equal((await api.post(`${ns('u')}/exists`, {})).status, 200);
    });

    it('the root cannot be dropped (400 code 13)', async () => {
      const { api } = await newTenant(gw);
      await create(api, ['survivor']);
      expectProblem(await api.post('/v1/namespace/%24/drop', {}), 400, 13);
      expectProblem(await api.post('/v1/namespace/%24/drop', { behavior: 'Cascade' }), 400, 13);
      expectProblem(await api.post('/v1/namespace/%24/drop', { mode: 'Skip' }), 400, 13);
      assert.deepEqual((await api.get(`${ns()}/list`)).body.namespaces, ['survivor']);
    });

    it('unknown transaction ids are 404 code 10', async () => {
      const { api } = await newTenant(gw);
      expectProblem(await api.post('/v1/transaction/00000000-0000-4000-8000-000000000000/describe', {}), 404, 10);
      expectProblem(await api.post('/v1/transaction/not-a-uuid/describe', {}), 404, 10);
    });
  });

  describe('asynchronous cascade (CASCADE_SYNC_BUDGET_MS=0)', () => {
    let agw: TestGateway;
    before(async () => {
      agw = await startGateway(kind, { CASCADE_SYNC_BUDGET_MS: '0' });
    });
    after(() => agw.close());

    it('returns a transaction id that eventually reports Succeeded', async () => {
      const { api } = await newTenant(agw);
      await create(api, ['big']);
      await create(api, ['big', 'sub']);
      const locs = [await declareStored(api, ['big', 't1']), await declareStored(api, ['big', 'sub', 't2'])];
      const r = await api.post(`${ns('big')}/drop`, { behavior: 'Cascade' });
      assert.equal(r.status, 200, r.text);
      assert.ok(Array.isArray(r.body.transaction_id), r.text);
      assert.equal(r.body.transaction_id.length, 1);
      const txid = r.body.transaction_id[0];
      assert.equal(typeof txid, 'string');
      // The catalog change is immediate even though storage clean-up is still running.
      expectProblem(await api.post(`${ns('big')}/exists`, {}), 404, 1);
      assert.deepEqual(await allTables(api), []);

      const done = await eventually(async () => {
        const d = await api.post(`/v1/transaction/${encodeURIComponent(txid)}/describe`, {});
        assert.equal(d.status, 200, d.text);
        assert.ok(['Queued', 'Running', 'Succeeded'].includes(d.body.status), d.text);
        return d.body.status === 'Succeeded' ? d : undefined;
      });
      assert.equal(done.body.status, 'Succeeded');
      for (const l of locs) assert.ok(!(await stored.exists(l)), l);

      // Another tenant cannot see the transaction.
      const other = await newTenant(agw);
      expectProblem(await other.api.post(`/v1/transaction/${txid}/describe`, {}), 404, 10);
    });

    it('a cascade drop without tables has nothing to track', async () => {
      const { api } = await newTenant(agw);
      await create(api, ['notables']);
      await create(api, ['notables', 'x']);
      const r = await api.post(`${ns('notables')}/drop`, { behavior: 'Cascade' });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.transaction_id, undefined);
    });
  });

  describe('identifiers', () => {
    it('multi-level ids joined by $ work percent-encoded and literal', async () => {
      const { api } = await newTenant(gw);
      await create(api, ['x']);
      const r = await api.post('/v1/namespace/x%24y/create', {});
      assert.equal(r.status, 200, r.text);
      const lit = await api.post('/v1/namespace/x$y$z/create', {});
      assert.equal(lit.status, 200, lit.text);
      assert.deepEqual((await api.get('/v1/namespace/x/list')).body.namespaces, ['y']);
      assert.deepEqual((await api.get('/v1/namespace/x%24y/list')).body.namespaces, ['z']);
      assert.equal((await api.post('/v1/namespace/x%24y%24z/exists', {})).status, 200);
    });

    it('?delimiter=. splits on periods; the delimiter alone is the root', async () => {
      const { api, name, writeKey } = await newTenant(gw);
      await create(api, ['d1']);
      const r = await api.post('/v1/namespace/d1.d2/create?delimiter=.', {});
      assert.equal(r.status, 200, r.text);
      assert.equal((await api.post('/v1/namespace/d1.d2.d3/create?delimiter=.', {})).status, 200);
      assert.deepEqual((await api.get(`${ns('d1')}/list`)).body.namespaces, ['d2']);
      assert.deepEqual((await api.get('/v1/namespace/d1.d2/list?delimiter=.')).body.namespaces, ['d3']);
      assert.equal((await api.post(`${ns('d1', 'd2', 'd3')}/exists`, {})).status, 200);
      // Without the delimiter, 'd1.d2' is one (missing) top-level name.
      expectProblem(await api.post('/v1/namespace/d1.d2/exists', {}), 404, 1);
      // '.' alone is the root (sent raw: fetch would normalise a '.' path segment).
      const root = await rawRequest(gw.url, 'GET', '/v1/namespace/./list?delimiter=.', {
        'x-api-key': writeKey,
        'x-service-database': name,
      });
      assert.equal(root.status, 200, root.text);
      assert.deepEqual(root.body.namespaces, ['d1']);
    });

    it('?delimiter=:: splits on a multi-character delimiter; "::" alone is the root', async () => {
      const { api } = await newTenant(gw);
      await create(api, ['m1']);
      assert.equal((await api.post('/v1/namespace/m1%3A%3Am2/create?delimiter=%3A%3A', {})).status, 200);
      assert.equal((await api.post('/v1/namespace/m1::m2::m3/create?delimiter=::', {})).status, 200);
      assert.deepEqual((await api.get(`${ns('m1', 'm2')}/list`)).body.namespaces, ['m3']);
      const root = await api.get('/v1/namespace/%3A%3A/list?delimiter=%3A%3A');
      assert.equal(root.status, 200, root.text);
      assert.deepEqual(root.body.namespaces, ['m1']);
      const rd = await api.post('/v1/namespace/::/describe?delimiter=::', {});
      assert.equal(rd.status, 200, rd.text);
      assert.deepEqual(rd.body.properties, {});
      // With '::' as delimiter, '$' is an ordinary (and invalid) character.
      expectProblem(await api.post('/v1/namespace/m1%24m2/exists?delimiter=::', {}), 400, 13);
    });

    it('rejects invalid names with 400 code 13 and creates nothing', async () => {
      const { api } = await newTenant(gw);
      await create(api, ['ok']);
      const bad = ['a%20b', 'a*', 'a%2Fb', 'a%24%24b', '%24a', 'a%24', 'ok%24b%20c', 'caf%C3%A9', 'a%3Bb', 'a%40b'];
      for (const p of bad) {
        expectProblem(await api.post(`/v1/namespace/${p}/create`, {}), 400, 13, { what: p });
        expectProblem(await api.post(`/v1/namespace/${p}/describe`, {}), 400, 13, { what: p });
      }
      expectProblem(await api.get('/v1/namespace/a%20b/list'), 400, 13);
      expectProblem(await api.post('/v1/namespace/a%20b/drop', { mode: 'Skip' }), 400, 13);
      expectProblem(await api.post('/v1/namespace/a/create?delimiter=', {}), 400, 13);
      assert.deepEqual((await api.get(`${ns()}/list`)).body.namespaces, ['ok']);
      assert.deepEqual((await api.get(`${ns('ok')}/list`)).body.namespaces, []);
    });

    it("accepts '.', '-', '_' and digits, including a name that is just '..'", async () => {
      const { api, name, writeKey } = await newTenant(gw);
      const names = ['a.b', 'x-y', 'under_score', '123', 'Mixed.Case-9_z', '...'];
      for (const n of names) await create(api, [n]);
      await create(api, ['a.b', '..']);
      await create(api, ['a.b', '.']);
      assert.deepEqual((await api.get(`${ns('a.b')}/list`)).body.namespaces.slice().sort(), ['.', '..']);
      assert.equal((await api.post(`${ns('a.b', '..')}/exists`, {})).status, 200);
      // A top-level '..', sent raw so the path segment is not normalised away.
      const h = { 'x-api-key': writeKey, 'x-service-database': name };
      const c = await rawRequest(gw.url, 'POST', '/v1/namespace/../create', h, '{}');
      assert.equal(c.status, 200, c.text);
      const e = await rawRequest(gw.url, 'POST', '/v1/namespace/%2E%2E/exists', h, '{}');
      assert.equal(e.status, 200, e.text);
      const top = (await api.get(`${ns()}/list`)).body.namespaces as string[];
      assert.deepEqual(top.slice().sort(), [...names, '..'].sort());
      for (const n of names) assert.equal((await api.post(`${ns(n)}/describe`, {})).status, 200, n);
    });

    it('a body id that disagrees with the path is 400 code 13; one that agrees is fine', async () => {
      const { api } = await newTenant(gw);
      expectProblem(await api.post(`${ns('p1')}/create`, { id: ['p2'] }), 400, 13);
      expectProblem(await api.post(`${ns('p1')}/create`, { id: ['p1', 'extra'] }), 400, 13);
      expectProblem(await api.post(`${ns('p1')}/create`, { id: 'p1' }), 400, 13);
      expectProblem(await api.post(`${ns('p1')}/exists`, {}), 404, 1);
      expectProblem(await api.post(`${ns('p2')}/exists`, {}), 404, 1);
      assert.equal((await api.post(`${ns('p1')}/create`, { id: ['p1'] })).status, 200);
      assert.equal((await api.post(`${ns('p1', 'q')}/create`, { id: ['p1', 'q'] })).status, 200);
      assert.equal((await api.post(`${ns('p1', 'q')}/describe`, { id: ['p1', 'q'] })).status, 200);
      expectProblem(await api.post(`${ns('p1', 'q')}/describe`, { id: ['p1'] }), 400, 13);
      expectProblem(await api.post(`${ns('p1', 'q')}/drop`, { id: ['p1'], behavior: 'Cascade' }), 400, 13);
      assert.equal((await api.post(`${ns('p1', 'q')}/exists`, {})).status, 200);
      assert.equal((await api.post('/v1/namespace/%24/describe', { id: [] })).status, 200);
      assert.equal((await api.post(`${ns('p1', 'q')}/drop`, { id: ['p1', 'q'] })).status, 200);
    });

    it('accepts a null body, an empty object and no body with a JSON content type', async () => {
      const { api } = await newTenant(gw);
      assert.equal((await api.post(`${ns('n1')}/create`, null)).status, 200);
      assert.equal((await api.post(`${ns('n2')}/create`, {})).status, 200);
      const json = { 'content-type': 'application/json' };
      const nobody = await api.request('POST', `${ns('n3')}/create`, undefined, json);
      assert.equal(nobody.status, 200, nobody.text);
      const empty = await api.request('POST', `${ns('n4')}/create`, '', json);
      assert.equal(empty.status, 200, empty.text);
      for (const op of ['describe', 'exists']) {
        assert.equal((await api.post(`${ns('n1')}/${op}`, null)).status, 200, op);
        assert.equal((await api.request('POST', `${ns('n1')}/${op}`, undefined, json)).status, 200, op);
      }
      assert.equal((await api.request('POST', `${ns('n3')}/drop`, undefined, json)).status, 200);
      assert.equal((await api.post(`${ns('n4')}/drop`, null)).status, 200);
      assert.deepEqual((await api.get(`${ns()}/list`)).body.namespaces, ['n1', 'n2']);
      // Malformed JSON and non-object bodies are 400 code 13.
      expectProblem(await api.post(`${ns('n5')}/create`, '{"mode":'), 400, 13);
      expectProblem(await api.post(`${ns('n5')}/create`, [1, 2]), 400, 13);
      expectProblem(await api.post(`${ns('n5')}/exists`, {}), 404, 1);
    });

    it('accepts a trailing slash on the route', async () => {
      const { api } = await newTenant(gw);
      assert.equal((await api.post(`${ns('ts')}/create/`, {})).status, 200);
      assert.equal((await api.post(`${ns('ts')}/exists/`, {})).status, 200);
      assert.equal((await api.post(`${ns('ts')}/describe/`, {})).status, 200);
      assert.deepEqual((await api.get(`${ns()}/list/`)).body.namespaces, ['ts']);
      expectProblem(await api.post(`${ns('nots')}/exists/`, {}), 404, 1);
      assert.equal((await api.post(`${ns('ts')}/drop/`, {})).status, 200);
    });
  });

  describe('concurrency', () => {
    it('20 parallel creates of one name: exactly one 200, nineteen 409s, listed once', async () => {
      const { api } = await newTenant(gw);
      const replies = await Promise.all(
        Array.from({ length: 20 }, (_, i) => api.post(`${ns('race')}/create`, { mode: 'Create', properties: { n: String(i) } })),
      );
      const ok = replies.filter((r) => r.status === 200);
      const conflicts = replies.filter((r) => r.status === 409);
      assert.equal(ok.length, 1, replies.map((r) => r.status).join(','));
      assert.equal(conflicts.length, 19);
      for (const c of conflicts) expectProblem(c, 409, 2);
      assert.deepEqual((await api.get(`${ns()}/list`)).body.namespaces, ['race']);
      const d = await api.post(`${ns('race')}/describe`, {});
      assert.equal(d.body.properties.n, ok[0].body.properties.n);
    });

    it('20 parallel ExistOk creates all succeed and agree on one namespace', async () => {
      const { api } = await newTenant(gw);
      const replies = await Promise.all(
        Array.from({ length: 20 }, (_, i) => api.post(`${ns('calm')}/create`, { mode: 'ExistOk', properties: { n: String(i) } })),
      );
      for (const r of replies) assert.equal(r.status, 200, r.text);
      assert.equal(new Set(replies.map((r) => r.body.properties.n)).size, 1);
      assert.equal(new Set(replies.map((r) => r.body.properties.created_at)).size, 1);
      assert.deepEqual((await api.get(`${ns()}/list`)).body.namespaces, ['calm']);
    });

    it('a cascade drop racing table declares leaves no orphan tables', async () => {
      const { api } = await newTenant(gw);
      await create(api, ['B']);
      await declare(api, ['B', 'other']);
      const won: string[] = [];
      // A few rounds, as each round is one interleaving of the race.
      for (let round = 0; round < 3; round++) {
        await create(api, ['A']);
        await create(api, ['A', 'child']);
        await declare(api, ['A', 'pre']);
        const declares = Array.from({ length: 10 }, (_, i) => api.post(`${tbl(...(i % 2 ? ['A', 'child'] : ['A']), `t${i}`)}/declare`, {}));
        const [drop, ...declared] = await Promise.all([api.post(`${ns('A')}/drop`, { behavior: 'Cascade' }), ...declares]);
        assert.equal(drop.status, 200, drop.text);
        for (const d of declared) {
          assert.ok(d.status === 200 || d.status === 404, `declare: ${d.status} ${d.text}`);
          if (d.status === 404) assert.equal(d.body.code, 1);
          else won.push(d.body.location);
        }
        expectProblem(await api.post(`${ns('A')}/exists`, {}), 404, 1);

        // Every listed table lives in a namespace that exists.
        const tables = await allTables(api);
        for (const t of tables) {
          const e = await api.post(`${ns(...t.split('$').slice(0, -1))}/exists`, {});
          assert.equal(e.status, 200, `round ${round}: orphan table ${t}`);
        }
        assert.deepEqual(tables, ['B$other']);

        // Re-creating A and its child resurrects nothing.
        await create(api, ['A']);
        await create(api, ['A', 'child']);
        assert.deepEqual((await api.get(`${ns('A')}/table/list`)).body.tables, []);
        assert.deepEqual((await api.get(`${ns('A', 'child')}/table/list`)).body.tables, []);
        assert.equal((await api.post(`${ns('A')}/drop`, { behavior: 'Cascade' })).status, 200);
      }
      assert.deepEqual(await allTables(api), ['B$other']);
      // Declares that won the race had their folders deleted with the cascade. (On an object store a declare
      // writes nothing, so there this only confirms that nothing was left under those locations.)
      await eventually(() => gone(won));
    });
  });

  describe('tenancy', () => {
    it("a database's namespaces are invisible to another database, which may reuse the names", async () => {
      const x = await newTenant(gw);
      const y = await newTenant(gw);
      await create(x.api, ['shared'], { properties: { owner: 'x' } });
      await create(x.api, ['shared', 'inner']);
      await create(x.api, ['xonly']);

      expectProblem(await y.api.post(`${ns('shared')}/describe`, {}), 404, 1);
      expectProblem(await y.api.post(`${ns('xonly')}/exists`, {}), 404, 1);
      expectProblem(await y.api.get(`${ns('shared')}/list`), 404, 1);
      assert.deepEqual((await y.api.get(`${ns()}/list`)).body.namespaces, []);

      const yc = await create(y.api, ['shared'], { properties: { owner: 'y' } });
      assert.equal(yc.body.properties.owner, 'y');
      assert.deepEqual((await y.api.get(`${ns('shared')}/list`)).body.namespaces, []);
      assert.equal((await x.api.post(`${ns('shared')}/describe`, {})).body.properties.owner, 'x');
      assert.deepEqual((await x.api.get(`${ns('shared')}/list`)).body.namespaces, ['inner']);

      // Dropping in Y leaves X untouched.
      assert.equal((await y.api.post(`${ns('shared')}/drop`, { behavior: 'Cascade' })).status, 200);
      assert.equal((await x.api.post(`${ns('shared', 'inner')}/exists`, {})).status, 200);
      assert.deepEqual((await x.api.get(`${ns()}/list`)).body.namespaces, ['shared', 'xonly']);
    });

    it('a read key can list and describe but not create or drop', async () => {
      const t = await newTenant(gw);
      await create(t.api, ['ro']);
      assert.equal((await t.reader.post(`${ns('ro')}/describe`, {})).status, 200);
      assert.deepEqual((await t.reader.get(`${ns()}/list`)).body.namespaces, ['ro']);
      expectProblem(await t.reader.post(`${ns('ro2')}/create`, {}), 403, 15);
      expectProblem(await t.reader.post(`${ns('ro')}/drop`, {}), 403, 15);
      assert.equal((await t.api.post(`${ns('ro')}/exists`, {})).status, 200);
    });
  });

  describe('BASE_PATH', () => {
    let bgw: TestGateway;
    before(async () => {
      bgw = await startGateway(kind, { BASE_PATH: '/lance' });
    });
    after(() => bgw.close());

    it('serves the REST routes under the base path only; /healthz stays unprefixed', async () => {
      const { api } = await newTenant(bgw);
      const c = await api.post(`/lance${ns('bp')}/create`, {});
      assert.equal(c.status, 200, c.text);
      assert.equal((await api.post(`/lance${ns('bp')}/exists`, {})).status, 200);
      assert.deepEqual((await api.get(`/lance${ns()}/list`)).body.namespaces, ['bp']);
      expectProblem(await api.post(`/lance${ns('nobp')}/describe`, {}), 404, 1);

      const unprefixed = await api.post(`${ns('bp')}/exists`, {});
      assert.equal(unprefixed.status, 404, unprefixed.text);
      assert.notEqual(unprefixed.body?.code, 1, 'the unprefixed route must not reach the namespace service');
      assert.equal((await api.get(`${ns()}/list`)).status, 404);
      assert.equal((await api.post(`${ns('other')}/create`, {})).status, 404);
      expectProblem(await api.post(`/lance${ns('other')}/exists`, {}), 404, 1);

      const health = await new Api(bgw.url).get('/healthz');
      assert.equal(health.status, 200, health.text);
    });
  });
});
