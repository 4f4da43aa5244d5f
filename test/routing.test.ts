import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import * as lancedb from '@lancedb/lancedb';
import {
  Api,
  forEachCatalog,
  idPath,
  newTenant,
  rawRequest,
  Reply,
  startGateway,
  Tenant,
  TEST_STORAGE,
  TestGateway,
} from './helpers/gateway';
import { expectProblem } from './helpers/assertions';
import { writeTable } from './helpers/lance';
import * as stored from './helpers/stored';

/**
 * Tenancy resolution (issue 3): which database a request addresses — the database header or its alias, else the
 * host name under TENANT_HOST_SUFFIX — and which catalog inside it (the database prefix).
 */

forEachCatalog('tenancy: database from the host name', (kind) => {
  const SUFFIX = '.gw.example.com';
  let gw: TestGateway;
  let t: Tenant;
  let other: Tenant;

  before(async () => {
    gw = await startGateway(kind, { TENANT_HOST_SUFFIX: SUFFIX });
    t = await newTenant(gw);
    other = await newTenant(gw);
  });
  after(() => gw.close());

  const viaHost = (host: string, method: string, p: string, extra: Record<string, string> = {}, body?: unknown) =>
    rawRequest(gw.url, method, p, { host, 'x-api-key': t.writeKey, ...extra }, body);

  it('routes a request with no database header to the database the host names', async () => {
    const created = await viaHost(`${t.name}${SUFFIX}`, 'POST', `/v1/namespace/${idPath('via_host')}/create`, {}, {});
    assert.equal(created.status, 200, created.text);
    // It landed in t's catalog (seen through the ordinary header) and nowhere else.
    assert.deepEqual((await t.api.get('/v1/namespace/%24/list')).body.namespaces, ['via_host']);
    assert.deepEqual((await other.api.get('/v1/namespace/%24/list')).body.namespaces, []);

    const listed = await viaHost(`${t.name}${SUFFIX}`, 'GET', '/v1/namespace/%24/list');
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(listed.body.namespaces, ['via_host']);
  });

  it('ignores a port and letter case in the Host header', async () => {
    const withPort = await viaHost(`${t.name}${SUFFIX}:8443`, 'GET', '/v1/namespace/%24/list');
    assert.equal(withPort.status, 200, withPort.text);
    assert.ok(withPort.body.namespaces.includes('via_host'));
    const upper = await viaHost(`${t.name}${SUFFIX}`.toUpperCase(), 'GET', '/v1/namespace/%24/list');
    assert.equal(upper.status, 200, upper.text);
    assert.ok(upper.body.namespaces.includes('via_host'));
    const both = await viaHost(`${t.name}${SUFFIX}:80`.toUpperCase(), 'POST', `/v1/namespace/${idPath('via_host')}/exists`, {}, {});
    assert.equal(both.status, 200, both.text);
  });

  it('a database header that disagrees with the host is 400 code 13; the same name in both is fine', async () => {
    const host = `${t.name}${SUFFIX}`;
    const clash = await viaHost(host, 'GET', '/v1/namespace/%24/list', { 'x-service-database': other.name });
    expectProblem(clash, 400, 13);
    assert.ok(clash.body.error.includes(other.name) && clash.body.error.includes(t.name), clash.body.error);
    // The key belongs to t, the header names other: still the disagreement that is reported, and nothing happens.
    const clashWrite = await viaHost(host, 'POST', `/v1/namespace/${idPath('clash')}/create`, { 'x-service-database': other.name }, {});
    expectProblem(clashWrite, 400, 13);
    const clashAlias = await viaHost(host, 'GET', '/v1/namespace/%24/list', { 'x-lancedb-database': other.name });
    expectProblem(clashAlias, 400, 13);
    assert.deepEqual((await other.api.get('/v1/namespace/%24/list')).body.namespaces, []);
    assert.equal((await t.api.post(`/v1/namespace/${idPath('clash')}/exists`, {})).status, 404);

    const agree = await viaHost(host, 'GET', '/v1/namespace/%24/list', { 'x-service-database': t.name });
    assert.equal(agree.status, 200, agree.text);
    assert.ok(agree.body.namespaces.includes('via_host'));
    const agreeAlias = await viaHost(host.toUpperCase(), 'GET', '/v1/namespace/%24/list', { 'x-lancedb-database': t.name });
    assert.equal(agreeAlias.status, 200, agreeAlias.text);
  });

  it('with no header and a host outside the suffix, answers 400 naming the header and the host pattern', async () => {
    for (const host of ['127.0.0.1', 'example.org', `gw.example.com`, `${t.name}.other.example.com`, `${t.name}gw.example.com`]) {
      const r = await viaHost(host, 'GET', '/v1/namespace/%24/list');
      expectProblem(r, 400, 13);
      assert.match(r.body.error, /x-service-database/, `${host}: ${r.body.error}`);
      assert.ok(r.body.error.includes(`<database>${SUFFIX}`), `${host}: ${r.body.error}`);
    }
    // The header alone still works on such a host.
    const r = await viaHost('example.org', 'GET', '/v1/namespace/%24/list', { 'x-service-database': t.name });
    assert.equal(r.status, 200, r.text);
  });

  it('a database the key does not belong to is 403, whether it exists or not (no enumeration)', async () => {
    const unknown = await viaHost(`no_such_db${SUFFIX}`, 'GET', '/v1/namespace/%24/list');
    expectProblem(unknown, 403, 15, { msg: /no_such_db/ });
    const foreign = await viaHost(`${other.name}${SUFFIX}`, 'GET', '/v1/namespace/%24/list');
    expectProblem(foreign, 403, 15);
    const noKey = await rawRequest(gw.url, 'GET', '/v1/namespace/%24/list', { host: `${t.name}${SUFFIX}` });
    expectProblem(noKey, 401, 16);
  });
});

forEachCatalog('tenancy: header aliases of the official clients', (kind) => {
  let gw: TestGateway;
  let t: Tenant;
  before(async () => {
    gw = await startGateway(kind);
    t = await newTenant(gw);
  });
  after(() => gw.close());

  it('x-lancedb-database works like x-service-database', async () => {
    const alias = new Api(gw.url, { 'x-api-key': t.writeKey, 'x-lancedb-database': t.name });
    assert.equal((await alias.post(`/v1/namespace/${idPath('by_alias')}/create`, {})).status, 200);
    assert.deepEqual((await t.api.get('/v1/namespace/%24/list')).body.namespaces, ['by_alias']);
    assert.deepEqual((await alias.get('/v1/namespace/%24/list')).body.namespaces, ['by_alias']);
    expectProblem(await alias.get('/v1/namespace/%24/list', { 'x-lancedb-database': 'no_such_db' }), 403, 15);
    const other = await newTenant(gw);
    expectProblem(await alias.get('/v1/namespace/%24/list', { 'x-lancedb-database': other.name }), 403, 15);
  });

  it('x-lancedb-database-prefix works like x-service-database-prefix', async () => {
    const byAlias = t.api.with({ 'x-lancedb-database-prefix': 'team_alias' });
    const byHeader = t.api.with({ 'x-service-database-prefix': 'team_alias' });
    assert.equal((await byAlias.post(`/v1/namespace/${idPath('in_prefix')}/create`, {})).status, 200);
    assert.deepEqual((await byHeader.get('/v1/namespace/%24/list')).body.namespaces, ['in_prefix']);
    assert.deepEqual((await byAlias.get('/v1/namespace/%24/list')).body.namespaces, ['in_prefix']);
    assert.ok(!(await t.api.get('/v1/namespace/%24/list')).body.namespaces.includes('in_prefix'), 'invisible without the prefix');
    expectProblem(await t.api.with({ 'x-lancedb-database-prefix': 'te am' }).get('/v1/namespace/%24/list'), 400, 13);
  });
});

forEachCatalog('tenancy: database prefixes are separate catalogs', (kind) => {
  let gw: TestGateway;
  let t: Tenant;
  let team1: Api;
  let team2: Api;
  const dbFolder = () => stored.dbFolder(gw, t.name);
  const prefixFolder = (folder: string) => stored.join(dbFolder(), '.prefixes', folder);
  const isUnder = stored.isInside;
  const names = (r: Reply) => r.body.namespaces as string[];
  const ids = (n: number) => Array.from({ length: n }, (_, i) => ({ id: i }));

  before(async () => {
    gw = await startGateway(kind);
    t = await newTenant(gw);
    team1 = t.api.with({ 'x-service-database-prefix': 'team1' });
    team2 = t.api.with({ 'x-service-database-prefix': 'team2' });
  });
  after(() => gw.close());

  it('objects made under a prefix are invisible without it and under another prefix', async () => {
    assert.equal((await team1.post(`/v1/namespace/${idPath('sales')}/create`, { properties: { owner: 'team1' } })).status, 200);
    const declared = await team1.post(`/v1/table/${idPath('sales', 'orders')}/declare`, {});
    assert.equal(declared.status, 200, declared.text);
    assert.deepEqual(names(await team1.get('/v1/namespace/%24/list')), ['sales']);
    assert.deepEqual((await team1.get('/v1/table')).body.tables, ['sales$orders']);

    for (const [label, api] of [
      ['no prefix', t.api],
      ['prefix team2', team2],
      ['read key, no prefix', t.reader],
    ] as const) {
      assert.deepEqual(names(await api.get('/v1/namespace/%24/list')), [], label);
      expectProblem(await api.post(`/v1/namespace/${idPath('sales')}/describe`, {}), 404, 1);
      expectProblem(await api.post(`/v1/namespace/${idPath('sales')}/exists`, {}), 404, 1);
      expectProblem(await api.post(`/v1/table/${idPath('sales', 'orders')}/describe`, {}), 404, 1);
      assert.deepEqual((await api.get('/v1/table')).body.tables, [], label);
    }
    // The read key with the prefix sees it.
    const reader1 = t.reader.with({ 'x-service-database-prefix': 'team1' });
    assert.equal((await reader1.post(`/v1/table/${idPath('sales', 'orders')}/describe`, {})).status, 200);
  });

  it('the same names can exist in every catalog, each with its own properties and folder', async () => {
    for (const [label, api] of [
      ['default', t.api],
      ['team2', team2],
    ] as const) {
      const ns = await api.post(`/v1/namespace/${idPath('sales')}/create`, { properties: { owner: label } });
      assert.equal(ns.status, 200, `${label}: ${ns.text}`);
      const tb = await api.post(`/v1/table/${idPath('sales', 'orders')}/declare`, {});
      assert.equal(tb.status, 200, `${label}: ${tb.text}`);
    }
    const loc = async (api: Api) => (await api.post(`/v1/table/${idPath('sales', 'orders')}/describe`, {})).body.location as string;
    const [l0, l1, l2] = [await loc(t.api), await loc(team1), await loc(team2)];
    assert.equal(new Set([l0, l1, l2]).size, 3, 'three different tables');
    assert.equal(stored.dirname(l0), dbFolder(), 'default catalog: directly in the database folder');
    assert.ok(isUnder(l1, prefixFolder('team1')), l1);
    assert.ok(isUnder(l2, prefixFolder('team2')), l2);
    const owner = async (api: Api) => (await api.post(`/v1/namespace/${idPath('sales')}/describe`, {})).body.properties.owner;
    assert.equal(await owner(t.api), 'default');
    assert.equal(await owner(team1), 'team1');
    assert.equal(await owner(team2), 'team2');

    // Dropping in one catalog leaves the others alone.
    assert.equal((await team2.post(`/v1/table/${idPath('sales', 'orders')}/drop`, {})).status, 200);
    expectProblem(await team2.post(`/v1/table/${idPath('sales', 'orders')}/exists`, {}), 404, 4);
    assert.equal((await team1.post(`/v1/table/${idPath('sales', 'orders')}/exists`, {})).status, 200);
    assert.equal((await t.api.post(`/v1/table/${idPath('sales', 'orders')}/exists`, {})).status, 200);
  });

  it('a declared location lies under <storageRoot>/<db>/.prefixes/<prefix>/; a/b becomes the folder a+b', async () => {
    const root = await team1.post(`/v1/table/${idPath('root_t')}/declare`, {});
    assert.equal(root.status, 200, root.text);
    assert.ok(isUnder(root.body.location, prefixFolder('team1')), root.body.location);
    // Locally the declared folder is made at once; an object store has no empty folders, so there the location holds
    // nothing until a client writes, and then the data is there.
    assert.equal(await stored.exists(root.body.location), TEST_STORAGE !== 's3');
    await writeTable(root.body.location, ids(1));
    assert.ok(await stored.hasVersions(root.body.location));

    const ab = t.api.with({ 'x-service-database-prefix': 'a/b' });
    const d = await ab.post(`/v1/table/${idPath('nested')}/declare`, {});
    assert.equal(d.status, 200, d.text);
    assert.ok(isUnder(d.body.location, prefixFolder('a+b')), d.body.location);
    assert.deepEqual((await ab.get('/v1/table')).body.tables, ['nested']);
    // 'a/b' is its own catalog: neither 'a' nor 'b' sees it.
    assert.deepEqual((await t.api.with({ 'x-service-database-prefix': 'a' }).get('/v1/table')).body.tables, []);
    assert.deepEqual((await t.api.with({ 'x-service-database-prefix': 'b' }).get('/v1/table')).body.tables, []);
  });

  it('invalid prefix components are 400 code 13', async () => {
    for (const bad of ['te am', 'a$b', 'x/y z', 'ü']) {
      const r = await t.api.with({ 'x-service-database-prefix': bad }).get('/v1/namespace/%24/list');
      expectProblem(r, 400, 13);
      assert.match(r.body.error, /prefix/, `${bad}: ${r.body.error}`);
    }
  });

  // Regression: a prefix names a storage folder, so components made only of periods would point into another
  // catalog's folder ('..' → the default catalog's, '.' → the parent of every prefix's). They are a 400 code 13.
  it('prefix components made only of periods are 400 code 13 (they would be path components)', async () => {
    for (const bad of ['..', '.', 'x/../y', '../team1']) {
      const r = await t.api.with({ 'x-service-database-prefix': bad }).get('/v1/namespace/%24/list');
      expectProblem(r, 400, 13);
    }
  });

  // Regression (same cause): with prefix '..' a declared table must not land in the default catalog's folder.
  it("prefix '..' does not declare into the default catalog's folder", async () => {
    const dotdot = await t.api.with({ 'x-service-database-prefix': '..' }).post(`/v1/table/${idPath('escape')}/declare`, {});
    if (dotdot.status === 200) {
      assert.notEqual(stored.dirname(dotdot.body.location), dbFolder());
    } else {
      expectProblem(dotdot, 400, 13);
    }
  });

  // Regression (same cause): prefix '.' would make `<db>/.prefixes/` a catalog folder, from which register_table
  // could take another prefix's (deregistered) data.
  it("prefix '.' cannot register another prefix's data", async () => {
    const t1 = await team1.post(`/v1/table/${idPath('victim')}/declare`, {});
    assert.equal(t1.status, 200, t1.text);
    await writeTable(t1.body.location, ids(3));
    // Deregistered, the data stays in team1's folder; only team1 should be able to register it again.
    assert.equal((await team1.post(`/v1/table/${idPath('victim')}/deregister`, {})).status, 200);
    const rel = stored.relative(stored.join(dbFolder(), '.prefixes'), t1.body.location); // team1/<uuid>.lance
    const reg = await t.api.with({ 'x-service-database-prefix': '.' }).post(`/v1/table/${idPath('stolen')}/register`, { location: rel });
    expectProblem(reg, 400, 13);
  });

  it("the default catalog cannot register a location inside another catalog's folder", async () => {
    const d = await team1.post(`/v1/table/${idPath('data_t')}/declare`, {});
    assert.equal(d.status, 200, d.text);
    await writeTable(d.body.location, ids(3));
    const rel = stored.relative(dbFolder(), d.body.location); // .prefixes/team1/<uuid>.lance
    const sep = stored.sepOf(d.body.location);
    assert.ok(rel.startsWith(`.prefixes${sep}team1${sep}`), rel);
    for (const location of [rel, `./${rel}`, `sub/../${rel}`, `.//${rel}`]) {
      const r = await t.api.post(`/v1/table/${idPath('stolen')}/register`, { location });
      expectProblem(r, 400, 13);
    }
    expectProblem(await t.api.post(`/v1/table/${idPath('stolen')}/exists`, {}), 404, 4);
    // From another prefix, the way out is a traversal: refused too.
    const fromTeam2 = await team2.post(`/v1/table/${idPath('stolen')}/register`, {
      location: `../team1/${stored.basename(d.body.location)}`,
    });
    expectProblem(fromTeam2, 400, 13);

    // Inside its own folder a prefix registers fine (a relative path from the prefix folder).
    const own = stored.join(prefixFolder('team1'), 'imports', 'x.lance');
    await writeTable(own, ids(2));
    const ok = await team1.post(`/v1/table/${idPath('imported')}/register`, { location: 'imports/x.lance' });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.location, 'imports/x.lance', 'register answers the location as given');
    assert.equal((await team1.post(`/v1/table/${idPath('imported')}/describe`, {})).body.location, own);
    assert.equal((await team1.post(`/v1/table/${idPath('imported')}/stats`, {})).body.num_rows, 2);
    expectProblem(await t.api.post(`/v1/table/${idPath('imported')}/exists`, {}), 404, 4);
  });

  it('the official client in remote mode sees the prefix with db://<db>/<prefix>, and not without', async () => {
    // Make the two listings distinguishable: a root table only in the default catalog.
    assert.equal((await t.api.post(`/v1/table/${idPath('only_default')}/declare`, {})).status, 200);
    const expected1 = (await team1.get('/v1/table')).body.tables as string[];
    const expected0 = (await t.api.get('/v1/table')).body.tables as string[];
    assert.ok(expected1.includes('root_t') && !expected1.includes('only_default'));
    assert.ok(expected0.includes('only_default') && !expected0.includes('root_t'));

    const withPrefix = await lancedb.connect(`db://${t.name}/team1`, { apiKey: t.writeKey, hostOverride: gw.url });
    const withoutPrefix = await lancedb.connect(`db://${t.name}`, { apiKey: t.writeKey, hostOverride: gw.url });
    try {
      const seen1 = await withPrefix.tableNames();
      assert.deepEqual([...seen1].sort(), [...expected1].sort());
      const seen0 = await withoutPrefix.tableNames();
      assert.deepEqual([...seen0].sort(), [...expected0].sort());
      assert.ok(!seen0.includes('root_t'), 'the prefix catalog is invisible from db://<db>');
    } finally {
      withPrefix.close();
      withoutPrefix.close();
    }
  });
});
