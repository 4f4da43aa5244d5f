import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import * as lancedb from '@lancedb/lancedb';
import { expectProblem } from './helpers/assertions';
import { Api, forEachCatalog, idPath, newTenant, startGateway, Tenant, TEST_STORAGE, TestGateway } from './helpers/gateway';

/**
 * CloneTable (issue 13): `POST /v1/table/{id}/clone` as the official remote client's `cloneTable` sends it, shallow
 * and deep, at the latest version, a version or a tag; only from a table of the caller's own database and prefix.
 */
forEachCatalog('clone', (kind) => {
  let gw: TestGateway;
  let tenant: Tenant;
  let remote: lancedb.Connection;

  const rows = (from: number, n: number) =>
    Array.from({ length: n }, (_, i) => ({ id: from + i, label: `row-${from + i}`, v: [from + i, 0.5] }));
  const path = (op: string, ...id: string[]) => `/v1/table/${idPath(...id)}/${op}`;
  const ids = async (t: lancedb.Table) => (await t.query().select(['id']).toArray()).map((r) => Number(r.id)).sort((a, b) => a - b);
  const locationOf = async (api: Api, ...id: string[]) => {
    const d = await api.post(path('describe', ...id), {});
    assert.equal(d.status, 200, d.text);
    return d.body.location as string;
  };

  /** Versions 1 (3 rows), 2 (5 rows), 3 (6 rows); tag `release` at 2. */
  async function source(name: string): Promise<lancedb.Table> {
    const t = await remote.createTable(name, rows(0, 3));
    await t.add(rows(3, 2));
    await t.add(rows(5, 1));
    await (await t.tags()).create('release', 2);
    return t;
  }

  before(async () => {
    gw = await startGateway(kind);
    tenant = await newTenant(gw);
    remote = await lancedb.connect(`db://${tenant.name}`, { apiKey: tenant.writeKey, hostOverride: gw.url });
  });
  after(async () => {
    remote?.close();
    await gw.close();
  });

  it('official client, shallow: cloneTable by location at the latest version, a version or a tag; clone and source then evolve apart', async () => {
    const src = await source('src_shallow');
    const loc = await locationOf(tenant.api, 'src_shallow');
    if (TEST_STORAGE === 's3') {
      // The engine binding cannot open a shallow clone's source with the store's options: 406 code 0, nothing made.
      expectProblem(await tenant.api.post(path('clone', 'c_latest'), { source_location: loc, is_shallow: true }), 406, 0, {
        msg: /is_shallow=false/,
      });
      await assert.rejects(remote.cloneTable('c_latest', loc), /406/);
      assert.ok(!(await remote.tableNames()).includes('c_latest'));
      return;
    }

    const latest = await remote.cloneTable('c_latest', loc);
    assert.equal(await latest.countRows(), 6);
    assert.deepEqual(await ids(latest), [0, 1, 2, 3, 4, 5]);
    const v1 = await remote.cloneTable('c_v1', loc, { sourceVersion: 1 });
    assert.equal(await v1.countRows(), 3);
    const tagged = await remote.cloneTable('c_tag', loc, { sourceTag: 'release', isShallow: true });
    assert.equal(await tagged.countRows(), 5);

    // Registered like a created table: listed, described, writable, and independent of the source.
    assert.ok((await remote.tableNames()).includes('c_latest'));
    await latest.add(rows(100, 2));
    assert.equal(await latest.countRows(), 8);
    assert.equal(await src.countRows(), 6);
    await src.delete('id < 3');
    assert.equal(await src.countRows(), 3);
    assert.equal(await latest.countRows(), 8);
    assert.equal(await (await remote.openTable('c_v1')).countRows(), 3);
  });

  it("official client, deep: the rows are copied into the clone's own folder, so it outlives its source", async () => {
    await source('src_deep');
    const loc = await locationOf(tenant.api, 'src_deep');
    const deep = await remote.cloneTable('d_tag', loc, { sourceTag: 'release', isShallow: false });
    assert.equal(await deep.countRows(), 5);
    const deepV1 = await remote.cloneTable('d_v1', 'src_deep', { sourceVersion: 1, isShallow: false });
    assert.deepEqual(await ids(deepV1), [0, 1, 2]);
    const deepLatest = await remote.cloneTable('d_latest', 'src_deep', { isShallow: false });
    const first = (await deepLatest.query().where('id = 4').toArray())[0];
    assert.equal(first.label, 'row-4');
    assert.deepEqual(Array.from(first.v as Iterable<number>), [4, 0.5]);
    assert.notEqual(await locationOf(tenant.api, 'd_latest'), loc);

    // The source goes (its folder with it): the deep clones still read and write.
    assert.equal((await tenant.api.post(path('drop', 'src_deep'), {})).status, 200);
    assert.equal(await (await remote.openTable('d_tag')).countRows(), 5);
    assert.equal(await (await remote.openTable('d_latest')).countRows(), 6);
    await deepV1.add(rows(50, 1));
    assert.equal(await deepV1.countRows(), 4);
  });

  it('deep: a computed column comes along with its values, its definition and its own metadata; the clone fills it afterwards', async () => {
    const src = await remote.createTable('src_computed', rows(0, 4));
    await src.addColumns({ computed: [{ name: 'dbl', valueSql: 'id * 2' }] });
    await (await src.refreshColumnAsync('dbl')).wait();
    await src.updateFieldMetadata([{ path: 'dbl', metadata: { 'lancedb:description': 'twice the id' } }]);
    const dbl = async (t: lancedb.Table) =>
      (await t.query().select(['id', 'dbl']).toArray())
        .map((r) => [Number(r.id), r.dbl === null ? null : Number(r.dbl)])
        .sort((a, b) => a[0]! - b[0]!);

    const deep = await remote.cloneTable('d_computed', 'src_computed', { isShallow: false });
    assert.deepEqual(await dbl(deep), [
      [0, 0],
      [1, 2],
      [2, 4],
      [3, 6],
    ]);
    assert.deepEqual(await dbl(deep), await dbl(src));
    const field = (await deep.schema()).fields.find((f) => f.name === 'dbl');
    assert.equal(field?.metadata.get('computed_column'), 'true', 'still a computed column');
    assert.equal(field?.metadata.get('computed_column.expression'), 'id * 2');
    assert.equal(field?.metadata.get('lancedb:description'), 'twice the id');
    assert.deepEqual(
      (await deep.query().where('id = 2').toArray()).map((r) => r.label),
      ['row-2'],
    );
    // Rows added to the clone are filled by the clone's own backfill.
    await deep.add(rows(10, 1));
    await (await deep.refreshColumnAsync('dbl')).wait();
    assert.deepEqual((await dbl(deep)).at(-1), [10, 20]);
  });

  it("a shallow clone's source cannot leave the catalog while the clone reads it (409 code 19, nothing removed); it can once the clone is gone", async () => {
    if (TEST_STORAGE === 's3') return; // shallow clones are local-storage only (406 above)
    const api = tenant.api;
    assert.equal((await api.post(`/v1/namespace/${idPath('srcns')}/create`, {})).status, 200);
    await remote.createTable({ name: 'kept', data: rows(0, 4) }, ['srcns']);
    const loc = await locationOf(api, 'srcns', 'kept');
    const clone = await remote.cloneTable('kept_clone', loc, { isShallow: true });
    const refused = /shallow clone reads this table's data files/;
    expectProblem(await api.post(path('drop', 'srcns', 'kept'), {}), 409, 19, { msg: refused });
    expectProblem(await api.post(path('deregister', 'srcns', 'kept'), {}), 409, 19, { msg: refused });
    // A cascade that would take the source but leave its clone is refused whole: namespace and source stay.
    expectProblem(await api.post(`/v1/namespace/${idPath('srcns')}/drop`, { behavior: 'Cascade' }), 409, 19, { msg: refused });
    assert.equal((await api.post(`/v1/namespace/${idPath('srcns')}/describe`, {})).status, 200);
    assert.equal(await (await remote.openTable('kept', ['srcns'])).countRows(), 4);
    assert.equal(await clone.countRows(), 4, "the clone still reads the source's files");
    // A cascade that takes source and clone together is fine; so is dropping a source whose clone was dropped first.
    assert.equal((await api.post(`/v1/namespace/${idPath('both')}/create`, {})).status, 200);
    await remote.createTable({ name: 's', data: rows(0, 2) }, ['both']);
    const bothLoc = await locationOf(api, 'both', 's');
    assert.equal((await api.post(path('clone', 'both', 'c'), { source_location: bothLoc, is_shallow: true })).status, 200);
    assert.equal((await api.post(`/v1/namespace/${idPath('both')}/drop`, { behavior: 'Cascade' })).status, 200);
    assert.equal((await api.post(path('drop', 'kept_clone'), {})).status, 200);
    assert.equal((await api.post(path('drop', 'srcns', 'kept'), {})).status, 200);
  });

  it("raw HTTP: exactly 200 with the clone's location and version; the source may be named by identifier or relative location", async () => {
    const api = tenant.api;
    assert.equal((await api.post(`/v1/namespace/${idPath('team')}/create`, {})).status, 200);
    const t = await remote.createTable({ name: 'orders', data: rows(0, 4) }, ['team']);
    assert.equal(await t.countRows(), 4);

    const byId = await api.post(path('clone', 'team', 'orders_copy'), {
      source_location: 'team$orders',
      is_shallow: TEST_STORAGE === 'local',
    });
    assert.equal(byId.status, 200, byId.text);
    assert.equal(byId.body.version, 1);
    assert.equal(typeof byId.body.location, 'string');
    assert.equal(byId.headers.get('phalanx-version') !== null, true);
    const described = await api.post(path('describe', 'team', 'orders_copy'), {});
    assert.equal(described.status, 200, described.text);
    assert.equal(described.body.location, byId.body.location);

    // The location relative to the database folder (as register takes it).
    const abs = await locationOf(api, 'team', 'orders');
    const relative = abs.slice(abs.lastIndexOf('/') + 1);
    const byRel = await api.post(path('clone', 'orders_rel'), { source_location: relative, is_shallow: false });
    assert.equal(byRel.status, 200, byRel.text);
    const counted = await api.post(path('count_rows', 'orders_rel'), {});
    assert.equal(counted.body, 4);
  });

  it("only a table of the caller's own database and prefix can be a source; errors carry the spec codes and leave nothing behind", async () => {
    const api = tenant.api;
    await remote.createTable('mine', rows(0, 2));
    const other = await newTenant(gw);
    const theirs = await lancedb.connect(`db://${other.name}`, { apiKey: other.writeKey, hostOverride: gw.url });
    await theirs.createTable('secret', rows(0, 7));
    const theirLocation = await locationOf(other.api, 'secret');
    const prefixed = await lancedb.connect(`db://${tenant.name}/team9`, { apiKey: tenant.writeKey, hostOverride: gw.url });
    await prefixed.createTable('hidden', rows(0, 3));
    const prefixedApi = new Api(gw.url, { ...api.headers, 'x-service-database-prefix': 'team9' });
    const hiddenLocation = await locationOf(prefixedApi, 'hidden');
    const myLocation = await locationOf(api, 'mine');

    const clone = (target: string, body: Record<string, unknown>, as: Api = api) => as.post(path('clone', target), body);
    // Another database's table, by location or by name: outside this database, or no such table here.
    expectProblem(await clone('x1', { source_location: theirLocation, is_shallow: true }), 400, 13, {
      msg: 'source_location must be a table of this database',
    });
    expectProblem(await clone('x2', { source_location: 'secret', is_shallow: true }), 404, 4);
    // Another prefix's table (same database) and the other way round.
    expectProblem(await clone('x3', { source_location: hiddenLocation, is_shallow: true }), 400, 13);
    expectProblem(await clone('x4', { source_location: myLocation, is_shallow: true }, prefixedApi), 400, 13);
    // Arbitrary paths, traversal, a folder of the database no table is registered at.
    for (const p of ['/etc', '/etc/passwd.lance', 'file:///tmp/x.lance', '../other/t.lance', 's3://bucket/t.lance']) {
      expectProblem(await clone('x5', { source_location: p, is_shallow: true }), 400, 13, { what: p });
    }
    const unregistered = myLocation.replace(/[^/]+\.lance$/, '00000000-0000-4000-8000-000000000000.lance');
    const r = await clone('x6', { source_location: unregistered, is_shallow: true });
    assert.ok(r.status === 400 || r.status === 404, r.text);
    // Versions and tags the source does not have; both at once; the target taken; a reader; a declared-only source.
    expectProblem(await clone('x7', { source_location: 'mine', source_version: 99, is_shallow: true }), 404, 11);
    expectProblem(await clone('x8', { source_location: 'mine', source_tag: 'nope', is_shallow: false }), 404, 8);
    expectProblem(await clone('x9', { source_location: 'mine', source_version: 1, source_tag: 't', is_shallow: true }), 400, 13);
    expectProblem(await clone('mine', { source_location: 'mine', is_shallow: true }), 409, 5);
    expectProblem(await clone('x10', { source_location: 'mine', is_shallow: true }, tenant.reader), 403, 15);
    assert.equal((await api.post(path('declare', 'declared_only'), {})).status, 200);
    expectProblem(await clone('x11', { source_location: 'declared_only', is_shallow: true }), 400, 13);
    expectProblem(await clone('x12', { is_shallow: true }), 400, 13);

    // None of the refused clones exists, and the other tenant's table is untouched.
    const names = await remote.tableNames();
    for (let i = 1; i <= 12; i++) assert.ok(!names.includes(`x${i}`), `x${i}`);
    assert.equal(await (await theirs.openTable('secret')).countRows(), 7);
    theirs.close();
    prefixed.close();
  });
});
