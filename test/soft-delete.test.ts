import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, it } from 'node:test';
import * as lancedb from '@lancedb/lancedb';
import {
  Api,
  eventually,
  forEachCatalog,
  idPath,
  newTenant,
  operator,
  startGateway,
  Tenant,
  TEST_STORAGE,
  TestGateway,
} from './helpers/gateway';
import { expectProblem } from './helpers/assertions';
import { exists } from './helpers/stored';
import { Reclaimer } from '../src/modules/reclaim/reclaimer.service';
import { StorageScan } from '../src/modules/reclaim/storage-scan.service';
import { PendingLocationsRepository } from '../src/platform/cluster/pending-locations.repository';
import { DroppedTablesRepository } from '../src/modules/catalog/dropped/dropped-tables.repository';
import { runAdmin } from './helpers/admin-cli';

/**
 * Soft-delete, undrop and protection (docs/soft-delete.md): a database's delete profile decides what a drop
 * does; a soft-dropped table keeps its data (rows, versions, tags, indices) until undropped or purged at the end of
 * its retention; protected tables, namespaces and databases cannot be dropped until the flag is cleared.
 */
forEachCatalog('soft-delete, undrop and protection', (kind) => {
  let gw: TestGateway;
  let op: Api;

  /** A database with a soft profile (retention in seconds), its write key, and an admin key. */
  async function softTenant(retentionSeconds = 3600): Promise<Tenant & { admin: Api }> {
    const t = await newTenant(gw);
    const patched = await op.request('PATCH', `/admin/v1/databases/${t.name}`, {
      drop_profile: 'soft',
      drop_retention_seconds: retentionSeconds,
    });
    assert.equal(patched.status, 200, patched.text);
    assert.deepEqual(patched.body.drop_profile, {
      profile: 'soft',
      retention_seconds: retentionSeconds,
      source: { profile: 'database', retention_seconds: 'database' },
    });
    const key = await op.post(`/admin/v1/databases/${t.name}/api-keys`, { role: 'admin' });
    return { ...t, admin: new Api(gw.url, { 'x-api-key': key.body.api_key, 'x-service-database': t.name }) };
  }

  const remote = (t: Tenant, key = t.writeKey) => lancedb.connect(`db://${t.name}`, { apiKey: key, hostOverride: gw.url });
  const rows = (from: number, n: number) =>
    Array.from({ length: n }, (_, i) => ({ id: from + i, label: `row-${from + i}`, vector: [from + i, 1] }));
  const listDropped = async (t: { admin: Api }) => {
    const r = await t.admin.post('/v1/dropped_tables/list', {});
    assert.equal(r.status, 200, r.text);
    return r.body.dropped_tables as Array<{
      id: string;
      table: string[];
      location: string;
      last_version: number | null;
      purge_after: string;
    }>;
  };

  before(async () => {
    // A purge sweep every second, and a short reclaim age so the reclaimer test need not wait long.
    gw = await startGateway(kind, { DROP_PURGE_INTERVAL_SECONDS: '1', RECLAIM_AFTER_SECONDS: '1', RECLAIM_INTERVAL_SECONDS: '0' });
    op = operator(gw);
  });
  after(async () => {
    await gw.close();
  });

  it('the server default is hard: a drop removes the folder at once and nothing is listed as dropped', async () => {
    const t = await newTenant(gw);
    const got = await op.get(`/admin/v1/databases/${t.name}`);
    assert.deepEqual(got.body.drop_profile.profile, 'hard');
    assert.equal(got.body.drop_profile.source.profile, 'server');
    assert.equal(got.body.protected, false);
    const db = await remote(t);
    await db.createTable('gone', rows(0, 5));
    const location = (await t.api.post(`/v1/table/${idPath('gone')}/describe`, {})).body.location as string;
    assert.ok(await exists(location));
    await db.dropTable('gone');
    assert.equal(await exists(location), false, 'the hard drop removed the folder');
    const listed = await op.get(`/admin/v1/databases/${t.name}/dropped-tables`);
    assert.equal(listed.status, 200);
    assert.deepEqual(listed.body.dropped_tables, []);
    db.close();
  });

  it('drop → list → undrop restores rows, versions, tags and indices, through the official client; the name was free meanwhile', async () => {
    const t = await softTenant();
    const db = await remote(t);
    const table = await db.createTable('orders', rows(0, 300));
    await table.add(rows(300, 10));
    await table.createIndex('id', { config: lancedb.Index.btree() });
    const tags = await table.tags();
    await tags.create('first', 1);
    const versions = (await table.listVersions()).map((v) => v.version);
    const version = await table.version();
    const location = (await t.api.post(`/v1/table/${idPath('orders')}/describe`, {})).body.location as string;

    await db.dropTable('orders');
    assert.deepEqual(await db.tableNames(), [], 'a dropped table is not listed');
    expectProblem(await t.api.post(`/v1/table/${idPath('orders')}/describe`, {}), 404, 4);
    assert.ok(await exists(location), 'its data is kept');

    const [entry] = await listDropped(t);
    assert.deepEqual(entry.table, ['orders']);
    assert.equal(entry.location, location);
    assert.equal(entry.last_version, version);
    assert.ok(Date.parse(entry.purge_after) > Date.now() + 3000 * 1000, 'kept for the retention');

    // The name is free at once: a new table gets a new location, nothing of the old one.
    const fresh = await db.createTable('orders', rows(1000, 2));
    assert.equal(await fresh.countRows(), 2);
    assert.notEqual((await t.api.post(`/v1/table/${idPath('orders')}/describe`, {})).body.location, location);
    await db.dropTable('orders');
    const both = await listDropped(t);
    assert.equal(both.length, 2);
    // Keyset pages, newest first.
    const first = await t.admin.post('/v1/dropped_tables/list', { limit: 1 });
    assert.equal(first.body.dropped_tables[0].id, both[0].id);
    const second = await t.admin.post('/v1/dropped_tables/list', { limit: 1, page_token: first.body.page_token });
    assert.equal(second.status, 200, second.text);
    assert.equal(second.body.dropped_tables[0].id, both[1].id);
    assert.ok(both[0].last_version !== null);

    // Undrop the first one (the older entry) to its own name.
    const undone = await t.admin.post(`/v1/dropped_tables/${entry.id}/undrop`, {});
    assert.equal(undone.status, 200, undone.text);
    assert.deepEqual(undone.body.id, ['orders']);
    assert.equal(undone.body.location, location);
    const back = await db.openTable('orders');
    assert.equal(await back.countRows(), 310);
    assert.equal(await back.version(), version);
    assert.deepEqual(
      (await back.listVersions()).map((v) => v.version),
      versions,
    );
    assert.equal(await (await back.tags()).getVersion('first'), 1);
    assert.deepEqual(
      (await back.listIndices()).map((i) => i.name),
      ['id_idx'],
    );
    assert.equal((await back.query().where('id = 305').toArray()).length, 1);
    await back.add(rows(400, 1));
    assert.equal(await back.countRows(), 311, 'an undropped table takes writes');
    assert.equal((await listDropped(t)).length, 1);
    db.close();
  });

  it('undrop to a new name when the old one was taken since (409, code 5, without one); into another namespace', async () => {
    const t = await softTenant();
    const db = await remote(t);
    await db.createTable('events', rows(0, 3));
    await db.dropTable('events');
    await db.createTable('events', rows(10, 1));
    const [entry] = await listDropped(t);
    expectProblem(await t.admin.post(`/v1/dropped_tables/${entry.id}/undrop`, {}), 409, 5);
    expectProblem(await t.admin.post(`/v1/dropped_tables/${entry.id}/undrop`, { new_name: 'events', new_namespace: ['nowhere'] }), 404, 1);
    const renamed = await t.admin.post(`/v1/dropped_tables/${entry.id}/undrop`, { new_name: 'events_restored' });
    assert.equal(renamed.status, 200, renamed.text);
    assert.deepEqual(renamed.body.id, ['events_restored']);
    assert.equal(await (await db.openTable('events_restored')).countRows(), 3);
    assert.equal(await (await db.openTable('events')).countRows(), 1);
    // It is gone from the list: a second undrop is a 404.
    expectProblem(await t.admin.post(`/v1/dropped_tables/${entry.id}/undrop`, {}), 404, 4);

    // Into another namespace (new_namespace), which must exist.
    assert.equal((await t.api.post(`/v1/namespace/${idPath('archive')}/create`, {})).status, 200);
    await db.dropTable('events');
    const [second] = await listDropped(t);
    const moved = await t.admin.post(`/v1/dropped_tables/${second.id}/undrop`, { new_namespace: ['archive'] });
    assert.equal(moved.status, 200, moved.text);
    assert.deepEqual(moved.body.id, ['archive', 'events']);
    assert.equal((await t.api.post(`/v1/table/${idPath('archive', 'events')}/count_rows`, {})).body, 1);
    db.close();
  });

  it("the retention's end purges the data and the entry; purge now removes it at once", async () => {
    const t = await softTenant(1);
    const db = await remote(t);
    await db.createTable('short', rows(0, 20));
    const location = (await t.api.post(`/v1/table/${idPath('short')}/describe`, {})).body.location as string;
    await db.dropTable('short');
    assert.ok(await exists(location));
    // The sweep runs every second on this gateway: bounded polling for it.
    await eventually(async () => !(await exists(location)) && (await listDropped(t)).length === 0, 200, 50);

    const keep = await softTenant(3600);
    const db2 = await remote(keep);
    await db2.createTable('now', rows(0, 5));
    const loc2 = (await keep.api.post(`/v1/table/${idPath('now')}/describe`, {})).body.location as string;
    await db2.dropTable('now');
    const [entry] = await listDropped(keep);
    // Purge: the database's admin key (write keys may not), or the operator.
    expectProblem(await keep.api.post(`/v1/dropped_tables/${entry.id}/purge`, {}), 403, 15);
    const purged = await keep.admin.post(`/v1/dropped_tables/${entry.id}/purge`, {});
    assert.equal(purged.status, 200, purged.text);
    assert.equal(purged.body.removed, true);
    assert.equal(await exists(loc2), false);
    assert.deepEqual(await listDropped(keep), []);
    expectProblem(await keep.admin.post(`/v1/dropped_tables/${entry.id}/purge`, {}), 404, 4);

    // The operator's routes, for any database.
    await db2.createTable('op', rows(0, 1));
    await db2.dropTable('op');
    const opList = await op.get(`/admin/v1/databases/${keep.name}/dropped-tables`);
    assert.equal(opList.status, 200);
    assert.equal(opList.body.dropped_tables.length, 1);
    assert.equal(opList.body.dropped_tables[0].catalog, '');
    const opPurge = await op.post(`/admin/v1/databases/${keep.name}/dropped-tables/${opList.body.dropped_tables[0].id}/purge`, {});
    assert.equal(opPurge.status, 200, opPurge.text);
    db.close();
    db2.close();
  });

  it('a namespace cascade soft-drops its tables; they can be undropped once the namespace exists again', async () => {
    const t = await softTenant();
    const ns = await lancedb.connectNamespace('rest', { uri: gw.url, headers: { 'x-api-key': t.writeKey, 'x-service-database': t.name } });
    await ns.createNamespace(['team']);
    await ns.createNamespace(['team', 'sub']);
    await ns.createTable('a', rows(0, 4), ['team']);
    await ns.createTable('b', rows(0, 6), ['team', 'sub']);
    const locA = (await t.api.post(`/v1/table/${idPath('team', 'a')}/describe`, {})).body.location as string;
    const dropped = await t.api.post(`/v1/namespace/${idPath('team')}/drop`, { behavior: 'Cascade' });
    assert.equal(dropped.status, 200, dropped.text);
    assert.equal(dropped.body.transaction_id, undefined, 'nothing to delete: no clean-up transaction');
    assert.ok(await exists(locA));
    const listed = await listDropped(t);
    assert.deepEqual(listed.map((d) => d.table.join('.')).sort(), ['team.a', 'team.sub.b']);
    assert.ok(listed.every((d) => d.last_version !== null));

    const a = listed.find((d) => d.table.join('.') === 'team.a')!;
    expectProblem(await t.admin.post(`/v1/dropped_tables/${a.id}/undrop`, {}), 404, 1);
    await ns.createNamespace(['team']);
    const back = await t.admin.post(`/v1/dropped_tables/${a.id}/undrop`, {});
    assert.equal(back.status, 200, back.text);
    assert.equal(await (await ns.openTable('a', ['team'])).countRows(), 4);

    // The audit record of the cascade names each table's location and last version.
    const trail = await op.get(`/admin/v1/databases/${t.name}/audit?limit=50`);
    const drop = trail.body.events.find((e: { action: string }) => e.action === 'namespace.drop');
    assert.equal(drop.details.profile, 'soft');
    const recorded = drop.details.tables.find((x: { table: string }) => x.table === 'team$a');
    assert.equal(recorded.location, locA);
    assert.equal(recorded.last_version, a.last_version);

    // A namespace-mode drop and a namespace overwrite (create mode=overwrite) soft-drop too.
    await ns.dropTable('a', ['team']);
    await ns.createTable('c', rows(0, 2), ['team']);
    assert.equal((await t.api.post(`/v1/namespace/${idPath('team')}/create`, { mode: 'overwrite' })).status, 200);
    const after = (await listDropped(t)).map((d) => d.table.join('.')).sort();
    assert.deepEqual(after, ['team.a', 'team.c', 'team.sub.b']);
    ns.close();
  });

  it('a protected table, namespace or database cannot be dropped until the flag is cleared', async () => {
    const t = await softTenant();
    const db = await remote(t);
    await db.createTable('keep', rows(0, 2));
    // Protection is set by an admin key (a write key may not).
    expectProblem(await t.api.post(`/v1/table/${idPath('keep')}/protection`, { protected: true }), 403, 15);
    const on = await t.admin.post(`/v1/table/${idPath('keep')}/protection`, { protected: true });
    assert.equal(on.status, 200, on.text);
    assert.equal(on.body.properties.protected, 'true');
    await assert.rejects(db.dropTable('keep'), /protected/);
    expectProblem(await t.api.post(`/v1/table/${idPath('keep')}/drop`, {}), 409, 19);
    expectProblem(await t.api.post(`/v1/table/${idPath('keep')}/deregister`, {}), 409, 19);
    assert.equal(await (await db.openTable('keep')).countRows(), 2);
    const off = await t.admin.post(`/v1/table/${idPath('keep')}/protection`, { protected: false });
    assert.equal(off.body.properties.protected, undefined);
    await db.dropTable('keep');

    // A namespace: its own drop, and a cascade from above that would remove it, are refused whole.
    for (const p of [['top'], ['top', 'inner']]) assert.equal((await t.api.post(`/v1/namespace/${idPath(...p)}/create`, {})).status, 200);
    const nsApi = await lancedb.connectNamespace('rest', {
      uri: gw.url,
      headers: { 'x-api-key': t.writeKey, 'x-service-database': t.name },
    });
    await nsApi.createTable('inside', rows(0, 1), ['top', 'inner']);
    assert.equal((await t.admin.post(`/v1/namespace/${idPath('top', 'inner')}/protection`, { protected: true })).status, 200);
    expectProblem(await t.api.post(`/v1/namespace/${idPath('top')}/drop`, { behavior: 'Cascade' }), 409, 19);
    expectProblem(await t.api.post(`/v1/namespace/${idPath('top')}/create`, { mode: 'overwrite' }), 409, 19);
    assert.equal(await (await nsApi.openTable('inside', ['top', 'inner'])).countRows(), 1, 'nothing of the refused cascade happened');
    assert.equal((await t.api.post(`/v1/namespace/${idPath('top', 'inner')}/exists`, {})).status, 200);
    // A protected table deep inside refuses the cascade too.
    assert.equal((await t.admin.post(`/v1/namespace/${idPath('top', 'inner')}/protection`, { protected: false })).status, 200);
    assert.equal((await t.admin.post(`/v1/table/${idPath('top', 'inner', 'inside')}/protection`, { protected: true })).status, 200);
    expectProblem(await t.api.post(`/v1/namespace/${idPath('top')}/drop`, { behavior: 'Cascade' }), 409, 19);
    assert.equal((await t.admin.post(`/v1/table/${idPath('top', 'inner', 'inside')}/protection`, { protected: false })).status, 200);
    assert.equal((await t.api.post(`/v1/namespace/${idPath('top')}/drop`, { behavior: 'Cascade' })).status, 200);
    // A namespace created with the property is protected from the start.
    assert.equal((await t.api.post(`/v1/namespace/${idPath('born')}/create`, { properties: { protected: 'true' } })).status, 200);
    expectProblem(await t.api.post(`/v1/namespace/${idPath('born')}/drop`, {}), 409, 19);

    // A database: PATCH protected, then DELETE is a 409 until cleared.
    assert.equal((await op.request('PATCH', `/admin/v1/databases/${t.name}`, { protected: true })).body.protected, true);
    expectProblem(await op.delete(`/admin/v1/databases/${t.name}`), 409, 14);
    assert.equal((await op.get(`/admin/v1/databases/${t.name}`)).status, 200);
    assert.equal((await op.request('PATCH', `/admin/v1/databases/${t.name}`, { protected: false })).status, 200);
    assert.equal((await op.delete(`/admin/v1/databases/${t.name}`)).status, 204);
    db.close();
    nsApi.close();
  });

  it("the reclaimer and the storage scan leave a soft-dropped table's data alone", async () => {
    const t = await softTenant();
    const db = await remote(t);
    await db.createTable('kept', rows(0, 7));
    await db.dropTable('kept');
    const [entry] = await listDropped(t);
    const dbId = (await op.get(`/admin/v1/databases/${t.name}`)).body.id as string;
    const [row] = await gw.app.get(DroppedTablesRepository).list(dbId, undefined, undefined, 10);
    // Records of dead work at its location (an in-place write and a clean-up whose writers went away).
    const pending = gw.app.get(PendingLocationsRepository);
    for (const kind of ['write', 'cleanup'] as const) {
      await pending.insert({
        id: randomUUID(),
        databaseId: dbId,
        databaseName: t.name,
        location: row.location,
        kind,
        requestId: null,
        owner: 'dead-replica',
      });
    }
    await new Promise((r) => setTimeout(r, 1500)); // older than RECLAIM_AFTER_SECONDS
    await gw.app.get(Reclaimer).runOnce();
    assert.ok(await exists(entry.location), 'the reclaimer did not remove it');
    const scan = await gw.app.get(StorageScan).scan(t.name, { delete: true, actor: 'test' });
    assert.deepEqual(scan.unknown, [], 'the scan knows it');
    assert.ok(await exists(entry.location));
    const back = await t.admin.post(`/v1/dropped_tables/${entry.id}/undrop`, {});
    assert.equal(back.status, 200, back.text);
    assert.equal(await (await db.openTable('kept')).countRows(), 7);
    db.close();
  });

  it('a purge cut off after its catalog change (the replica died) is finished by the reclaimer', async () => {
    const t = await softTenant();
    const db = await remote(t);
    await db.createTable('doomed', rows(0, 3));
    await db.dropTable('doomed');
    const [entry] = await listDropped(t);
    const dbId = (await op.get(`/admin/v1/databases/${t.name}`)).body.id as string;
    // What a sweep commits before it deletes the folder, by a replica that then dies.
    const [claim] = await gw.app.get(DroppedTablesRepository).claimForPurge('dead-replica', { id: entry.id, databaseId: dbId });
    assert.equal(claim.id, entry.id);
    assert.deepEqual(await listDropped(t), [], 'no longer listed: it cannot be undropped any more');
    assert.ok(await exists(entry.location), 'the folder is still there');
    await new Promise((r) => setTimeout(r, 1500)); // older than RECLAIM_AFTER_SECONDS
    await gw.app.get(Reclaimer).runOnce();
    assert.equal(await exists(entry.location), false, 'the reclaimer deleted it');
    db.close();
  });

  it("only admin keys list, undrop and purge; another database's dropped table is a 404; audit records carry location and version", async () => {
    const t = await softTenant();
    const other = await softTenant();
    const db = await remote(t);
    await db.createTable('mine', rows(0, 3));
    await db.createTable('mine', rows(0, 1), { mode: 'overwrite' });
    const version = await (await db.openTable('mine')).version();
    await db.dropTable('mine');
    const [entry] = await listDropped(t);

    for (const api of [t.api, t.reader]) {
      expectProblem(await api.post('/v1/dropped_tables/list', {}), 403, 15);
      expectProblem(await api.post(`/v1/dropped_tables/${entry.id}/undrop`, {}), 403, 15);
      expectProblem(await api.post(`/v1/dropped_tables/${entry.id}/purge`, {}), 403, 15);
    }
    assert.deepEqual(await listDropped(other), []);
    expectProblem(await other.admin.post(`/v1/dropped_tables/${entry.id}/undrop`, {}), 404, 4);
    expectProblem(await other.admin.post(`/v1/dropped_tables/${entry.id}/purge`, {}), 404, 4);
    expectProblem(await other.admin.post('/v1/dropped_tables/not-a-uuid/undrop', {}), 404, 4);
    // The operator route checks the database it names.
    expectProblem(await op.post(`/admin/v1/databases/${other.name}/dropped-tables/${entry.id}/undrop`, {}), 404, 4);

    assert.equal((await t.admin.post(`/v1/dropped_tables/${entry.id}/undrop`, {})).status, 200);
    await db.dropTable('mine');
    const [again] = await listDropped(t);
    assert.equal((await t.admin.post(`/v1/dropped_tables/${again.id}/purge`, {})).status, 200);

    const events = (await op.get(`/admin/v1/databases/${t.name}/audit?limit=50`)).body.events as Array<{
      action: string;
      target: string;
      details: any;
    }>;
    const of = (action: string) => events.filter((e) => e.action === action);
    assert.equal(of('table.drop').length, 2);
    for (const e of of('table.drop')) {
      assert.equal(e.details.location, entry.location);
      assert.equal(e.details.last_version, version);
      assert.equal(e.details.profile, 'soft');
    }
    const [undrop] = of('table.undrop');
    assert.equal(undrop.target, 'mine');
    assert.equal(undrop.details.location, entry.location);
    assert.equal(undrop.details.last_version, version);
    const [purge] = of('table.purge');
    assert.equal(purge.target, 'mine');
    assert.equal(purge.details.location, entry.location);
    assert.equal(purge.details.last_version, version);
    db.close();
  });

  it("managed versioning: an undropped table's versions are in the catalog again (taken back from its manifests)", async () => {
    const name = `mv_${randomUUID().slice(0, 8)}`;
    const made = await op.post('/admin/v1/databases', { name, managed_versioning: true });
    if (made.status === 400) return; // a store without put-if-absent (not the local or S3 ones this suite runs on)
    assert.equal(made.status, 201, made.text);
    await op.request('PATCH', `/admin/v1/databases/${name}`, { drop_profile: 'soft' });
    const w = (await op.post(`/admin/v1/databases/${name}/api-keys`, { role: 'write' })).body.api_key;
    const a = (await op.post(`/admin/v1/databases/${name}/api-keys`, { role: 'admin' })).body.api_key;
    const api = new Api(gw.url, { 'x-api-key': w, 'x-service-database': name });
    const admin = new Api(gw.url, { 'x-api-key': a, 'x-service-database': name });
    const db = await lancedb.connect(`db://${name}`, { apiKey: w, hostOverride: gw.url });
    const table = await db.createTable('mv', rows(0, 3));
    await table.add(rows(3, 2));
    const before = (await api.post(`/v1/table/${idPath('mv')}/version/list`, {})).body.versions.map((v: { version: number }) => v.version);
    assert.deepEqual(before, [1, 2]);
    await db.dropTable('mv');
    const [entry] = (await admin.post('/v1/dropped_tables/list', {})).body.dropped_tables;
    assert.equal(entry.last_version, 2);
    assert.equal((await admin.post(`/v1/dropped_tables/${entry.id}/undrop`, {})).status, 200);
    const after = (await api.post(`/v1/table/${idPath('mv')}/version/list`, {})).body.versions.map((v: { version: number }) => v.version);
    assert.deepEqual(after, [1, 2]);
    assert.equal(await (await db.openTable('mv')).countRows(), 5);
    db.close();
  });

  it("shallow clones: a dropped clone's source is purged only after the clone; a clone is undropped only after its source", async () => {
    if (TEST_STORAGE === 's3') return; // shallow clones are local-storage only
    const t = await softTenant();
    const db = await remote(t);
    await db.createTable('src', rows(0, 4));
    const loc = (await t.api.post(`/v1/table/${idPath('src')}/describe`, {})).body.location as string;
    await db.cloneTable('cl', loc, { isShallow: true });
    // Unchanged: the source cannot leave the catalog while a live clone reads it.
    expectProblem(await t.api.post(`/v1/table/${idPath('src')}/drop`, {}), 409, 19);
    await db.dropTable('cl');
    await db.dropTable('src');
    const listed = await listDropped(t);
    const src = listed.find((d) => d.table[0] === 'src')!;
    const cl = listed.find((d) => d.table[0] === 'cl')!;
    expectProblem(await t.admin.post(`/v1/dropped_tables/${src.id}/purge`, {}), 409, 19);
    expectProblem(await t.admin.post(`/v1/dropped_tables/${cl.id}/undrop`, {}), 409, 19);
    assert.equal((await t.admin.post(`/v1/dropped_tables/${src.id}/undrop`, {})).status, 200);
    assert.equal((await t.admin.post(`/v1/dropped_tables/${cl.id}/undrop`, {})).status, 200);
    assert.equal(await (await db.openTable('cl')).countRows(), 4);
    db.close();
  });

  it('the CLI: databases update sets the profile and the flag; dropped list, undrop and purge', { skip: kind !== 'postgres' }, async () => {
    const t = await newTenant(gw);
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: gw.config.databaseUrl,
      // Migrations on Postgres itself when DATABASE_URL is a pooler (the pooler pass).
      DATABASE_DIRECT_URL: gw.config.databaseDirectUrl,
      DATA_DIR: gw.dataDir,
      STORAGE_ROOT: gw.config.storageRoot,
      NODE_NO_WARNINGS: '1',
    };
    if (TEST_STORAGE === 's3') Object.assign(env, { STORAGE_OPTIONS: JSON.stringify(gw.config.storage.profiles.get('default')!.options) });
    const cli = (...args: string[]) => runAdmin(args, env, 60_000);
    const updated = await cli(
      'databases',
      'update',
      t.name,
      '--drop-profile',
      'soft',
      '--drop-retention-seconds',
      '600',
      '--protected',
      'true',
    );
    assert.equal(updated.code, 0, updated.stderr);
    assert.equal(updated.json.drop_profile.profile, 'soft');
    assert.equal(updated.json.drop_profile.retention_seconds, 600);
    assert.equal(updated.json.protected, true);
    assert.equal((await cli('databases', 'update', t.name, '--drop-profile', 'maybe')).code, 2);
    const db = await remote(t);
    await db.createTable('c1', rows(0, 2));
    await db.dropTable('c1');
    await db.createTable('c1', rows(0, 1));
    const listed = await cli('dropped', 'list', t.name);
    assert.equal(listed.code, 0, listed.stderr);
    assert.equal(listed.json.dropped_tables.length, 1);
    const id = listed.json.dropped_tables[0].id;
    const taken = await cli('dropped', 'undrop', t.name, id);
    assert.equal(taken.code, 1);
    assert.match(taken.stderr, /exists/);
    const undone = await cli('dropped', 'undrop', t.name, id, '--name', 'c1_back');
    assert.equal(undone.code, 0, undone.stderr);
    assert.deepEqual(undone.json.id, ['c1_back']);
    assert.equal(await (await db.openTable('c1_back')).countRows(), 2);
    await db.dropTable('c1_back');
    const again = (await cli('dropped', 'list', t.name)).json.dropped_tables[0];
    const purged = await cli('dropped', 'purge', t.name, again.id);
    assert.equal(purged.code, 0, purged.stderr);
    assert.equal(await exists(again.location), false);
    expectProblem(await op.delete(`/admin/v1/databases/${t.name}`), 409, 14);
    db.close();
  });

  it('the CLI-facing operator settings: drop_profile back to the server default; invalid values are a 400', async () => {
    const t = await softTenant(60);
    const reset = await op.request('PATCH', `/admin/v1/databases/${t.name}`, { drop_profile: null, drop_retention_seconds: null });
    assert.equal(reset.status, 200);
    assert.deepEqual(reset.body.drop_profile.source, { profile: 'server', retention_seconds: 'server' });
    assert.equal(reset.body.drop_profile.profile, 'hard');
    expectProblem(await op.request('PATCH', `/admin/v1/databases/${t.name}`, { drop_profile: 'maybe' }), 400, 13);
    expectProblem(await op.request('PATCH', `/admin/v1/databases/${t.name}`, { drop_retention_seconds: 0 }), 400, 13);
  });
});
