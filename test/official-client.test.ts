import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import * as lancedb from '@lancedb/lancedb';
import { forEachCatalog, newTenant, startGateway, Tenant, TestGateway } from './helpers/gateway';

/**
 * The unmodified official LanceDB client in namespace mode (`connectNamespace('rest', …)`) against the gateway:
 * the client asks the catalog for locations and reads/writes Lance data there itself.
 */
forEachCatalog('official @lancedb/lancedb client, namespace mode', (kind) => {
  let gw: TestGateway;
  let tenant: Tenant;
  let db: lancedb.Connection;

  const rows = (from: number, n: number) =>
    Array.from({ length: n }, (_, i) => ({ id: from + i, label: `row-${from + i}`, vector: [from + i, (from + i) * 2, 1] }));

  before(async () => {
    gw = await startGateway(kind);
    tenant = await newTenant(gw);
    db = await lancedb.connectNamespace('rest', {
      uri: gw.url,
      headers: { 'x-api-key': tenant.writeKey, 'x-service-database': tenant.name },
    });
  });
  after(async () => {
    db?.close();
    await gw.close();
  });

  it('creates namespaces, writes and queries a table, renames it across namespaces and drops everything', async () => {
    await db.createNamespace(['sales']);
    await db.createNamespace(['sales', 'eu']);
    await db.createNamespace(['archive']);
    const listed = await db.listNamespaces(['sales']);
    assert.deepEqual(listed.namespaces, ['eu']);

    const table = await db.createTable('orders', rows(0, 10), ['sales', 'eu']);
    await table.add(rows(10, 5));
    assert.equal(await table.countRows(), 15);
    assert.equal(await table.countRows('id >= 12'), 3);

    const filtered = await table.query().where('id < 3').select(['id', 'label']).toArray();
    assert.deepEqual(
      filtered.map((r) => r.id).sort((a, b) => a - b),
      [0, 1, 2],
    );
    const nearest = await table.vectorSearch([7, 14, 1]).limit(2).toArray();
    assert.equal(nearest[0].id, 7);
    assert.equal(nearest.length, 2);

    assert.deepEqual(await db.tableNames(['sales', 'eu']), ['orders']);

    // The catalog sees the same table: full identifier in GET /v1/table, stats from the real data.
    const all = await tenant.api.get('/v1/table');
    assert.deepEqual(all.body.tables, ['sales$eu$orders']);
    const stats = await tenant.api.post(`/v1/table/${encodeURIComponent('sales$eu$orders')}/stats`, {});
    assert.equal(stats.status, 200);
    assert.equal(stats.body.num_rows, 15);
    assert.equal(stats.body.fragment_stats.num_fragments, 2);

    await db.renameTable('orders', 'orders_2025', { namespacePath: ['sales', 'eu'], newNamespacePath: ['archive'] });
    assert.deepEqual(await db.tableNames(['sales', 'eu']), []);
    assert.deepEqual(await db.tableNames(['archive']), ['orders_2025']);
    const moved = await db.openTable('orders_2025', ['archive']);
    assert.equal(await moved.countRows(), 15, 'a renamed table keeps its data');

    await db.dropTable('orders_2025', ['archive']);
    assert.deepEqual(await db.tableNames(['archive']), []);
    await db.dropNamespace(['sales', 'eu']);
    await db.dropNamespace(['sales']);
    await db.dropNamespace(['archive']);
    assert.deepEqual((await db.listNamespaces()).namespaces, []);
  });

  it('reports catalog errors with the client error the code selects', async () => {
    await db.createNamespace(['dup']);
    await assert.rejects(db.createNamespace(['dup']), /already exists/i);
    await assert.rejects(db.openTable('missing', ['dup']), /not found/i);
    await assert.rejects(db.createTable('t', rows(0, 1), ['no_such_ns']), /not found/i);
    await db.createTable('t', rows(0, 1), ['dup']);
    await assert.rejects(db.dropNamespace(['dup']), /not empty/i);
  });

  it('is refused with a read-only key for writes and with a key of another database', async () => {
    const reader = await lancedb.connectNamespace('rest', {
      uri: gw.url,
      headers: { 'x-api-key': tenant.readKey, 'x-service-database': tenant.name },
    });
    const other = await newTenant(gw);
    const stranger = await lancedb.connectNamespace('rest', {
      uri: gw.url,
      headers: { 'x-api-key': other.writeKey, 'x-service-database': tenant.name },
    });
    try {
      await assert.rejects(reader.createNamespace(['nope']), /permission denied|needs a 'write' key/i);
      assert.ok(Array.isArray((await reader.listNamespaces()).namespaces));
      await assert.rejects(stranger.listNamespaces(), /permission denied|not valid for database/i);
    } finally {
      reader.close();
      stranger.close();
    }
  });
});
