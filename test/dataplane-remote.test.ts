import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import * as lancedb from '@lancedb/lancedb';
import * as arrow from 'apache-arrow';
import { forEachCatalog, newTenant, startGateway, Tenant, TestGateway } from './helpers/gateway';

/**
 * The unmodified official LanceDB client in remote mode (`connect('db://<database>', {apiKey, hostOverride})`):
 * every data operation runs in the gateway.
 */
forEachCatalog('official @lancedb/lancedb client, remote mode', (kind) => {
  let gw: TestGateway;
  let tenant: Tenant;
  let db: lancedb.Connection;

  const rows = (from: number, n: number) =>
    Array.from({ length: n }, (_, i) => ({
      id: from + i,
      label: `row-${from + i}`,
      text: (from + i) % 2 === 0 ? `the quick brown fox ${from + i}` : `lazy dog number ${from + i}`,
      vector: [from + i, (from + i) * 2, 1, 0.5],
    }));
  const vectorSchema = new arrow.Schema([
    new arrow.Field('id', new arrow.Int64(), true),
    new arrow.Field('label', new arrow.Utf8(), true),
    new arrow.Field('text', new arrow.Utf8(), true),
    new arrow.Field('vector', new arrow.FixedSizeList(4, new arrow.Field('item', new arrow.Float32(), true)), true),
  ]);
  const ids = (list: Array<{ id: unknown }>) => list.map((r) => Number(r.id)).sort((a, b) => a - b);

  before(async () => {
    gw = await startGateway(kind);
    tenant = await newTenant(gw);
    db = await lancedb.connect(`db://${tenant.name}`, { apiKey: tenant.writeKey, hostOverride: gw.url });
  });
  after(async () => {
    db?.close();
    await gw.close();
  });

  it('creates a table, appends, counts, queries, filters and projects', async () => {
    const table = await db.createTable('items', rows(0, 10), { schema: vectorSchema });
    assert.equal(await table.countRows(), 10);
    await table.add(rows(10, 5));
    assert.equal(await table.countRows(), 15);
    assert.equal(await table.countRows('id >= 12'), 3);
    assert.deepEqual(await db.tableNames(), ['items']);

    const filtered = await table.query().where('id < 3').select(['id', 'label']).toArray();
    assert.deepEqual(ids(filtered), [0, 1, 2]);
    assert.deepEqual(Object.keys(filtered[0]).sort(), ['id', 'label']);

    const all = await table.query().toArray();
    assert.equal(all.length, 15);
    const limited = await table.query().limit(4).toArray();
    assert.equal(limited.length, 4);

    const nearest = await table.vectorSearch([7, 14, 1, 0.5]).limit(2).toArray();
    assert.equal(Number(nearest[0].id), 7);
    assert.equal(nearest.length, 2);
    assert.ok('_distance' in nearest[0]);
    const cosine = await table.vectorSearch([1, 2, 1, 0.5]).distanceType('cosine').nprobes(4).refineFactor(2).limit(3).toArray();
    assert.equal(cosine.length, 3);
    const prefiltered = await table.vectorSearch([7, 14, 1, 0.5]).where('id > 10').limit(2).toArray();
    assert.deepEqual(ids(prefiltered), [11, 12]);

    // Several query vectors in one request (phalanx-version 0.2.0): answered with a query_index column.
    const multi = await table.query().nearestTo([1, 2, 1, 0.5]).addQueryVector([9, 18, 1, 0.5]).limit(1).toArray();
    assert.deepEqual(
      multi.map((r) => [Number(r.query_index), Number(r.id)]).sort((a, b) => a[0] - b[0]),
      [
        [0, 1],
        [1, 9],
      ],
    );

    const schema = await table.schema();
    assert.deepEqual(
      schema.fields.map((f) => f.name),
      ['id', 'label', 'text', 'vector'],
    );
    assert.ok((await table.version()) >= 2);
  });

  it('answers a small query whole and streams a large one, both complete', async () => {
    // Answers that end within 1 MiB go out as one buffer with a Content-Length; longer ones are streamed (chunked).
    const n = 30_000; // ~1.5 MB of answer: past the whole-answer bound
    await db.createTable('large', rows(0, n), { schema: vectorSchema });
    const query = (body: Record<string, unknown>) =>
      fetch(`${gw.url}/v1/table/large/query/`, {
        method: 'POST',
        headers: { 'x-api-key': tenant.readKey, 'x-service-database': tenant.name, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const small = await query({ vector: [7, 14, 1, 0.5], k: 3 });
    assert.equal(small.status, 200);
    const smallBytes = Buffer.from(await small.arrayBuffer());
    assert.equal(small.headers.get('content-length'), String(smallBytes.length), 'a small answer is sent whole');
    assert.equal(arrow.tableFromIPC(smallBytes).numRows, 3);

    const large = await query({ k: n, filter: 'id >= 0' });
    assert.equal(large.status, 200);
    assert.equal(large.headers.get('content-length'), null, 'a large answer is streamed');
    assert.equal(large.headers.get('transfer-encoding'), 'chunked');
    const whole = arrow.tableFromIPC(Buffer.from(await large.arrayBuffer()));
    assert.equal(whole.numRows, n);

    const table = await db.openTable('large');
    assert.equal((await table.query().limit(n).toArray()).length, n, 'the official client reads the streamed answer');
    assert.deepEqual(ids(await table.query().where('id < 3').toArray()), [0, 1, 2]);
  });

  it('answers create of an existing name as the client expects, honours exist_ok and overwrite', async () => {
    await db.createTable('dup', rows(0, 2), { schema: vectorSchema });
    await assert.rejects(db.createTable('dup', rows(0, 2), { schema: vectorSchema }), /already exists/i);
    const again = await db.createTable('dup', rows(0, 5), { schema: vectorSchema, existOk: true });
    assert.equal(await again.countRows(), 2, 'exist_ok keeps the existing data');
    const over = await db.createTable('dup', rows(100, 3), { schema: vectorSchema, mode: 'overwrite' });
    assert.equal(await over.countRows(), 3);
    assert.deepEqual(ids(await over.query().toArray()), [100, 101, 102]);
  });

  it('creates empty tables from a schema and fills them', async () => {
    const empty = await db.createEmptyTable('empty', vectorSchema);
    assert.equal(await empty.countRows(), 0);
    assert.deepEqual((await empty.query().toArray()).length, 0);
    await empty.add(rows(0, 3));
    assert.equal(await empty.countRows(), 3);
    await empty.add(rows(50, 2), { mode: 'overwrite' });
    assert.deepEqual(ids(await empty.query().toArray()), [50, 51]);
  });

  it('updates, deletes and merge-inserts', async () => {
    const table = await db.createTable('mut', rows(0, 6), { schema: vectorSchema });
    await table.update({ where: 'id < 2', values: { label: 'changed' } });
    const changed = await table.query().where("label = 'changed'").toArray();
    assert.deepEqual(ids(changed), [0, 1]);
    await table.update({ valuesSql: { id: 'id + 100' }, where: 'id = 5' });
    assert.equal(await table.countRows('id = 105'), 1);

    await table.delete('id >= 100');
    assert.equal(await table.countRows(), 5);

    const upsert = rows(3, 4).map((r) => ({ ...r, label: `upserted-${r.id}` }));
    const res = await table.mergeInsert('id').whenMatchedUpdateAll().whenNotMatchedInsertAll().execute(upsert);
    assert.equal(res.numUpdatedRows, 2);
    assert.equal(res.numInsertedRows, 2);
    assert.equal(await table.countRows(), 7);
    assert.equal(await table.countRows("label LIKE 'upserted-%'"), 4);
  });

  it('builds scalar, vector and full-text indices, lists them, searches full text and drops them', async () => {
    const table = await db.createTable('idx', rows(0, 300), { schema: vectorSchema });
    await table.createIndex('id', { config: lancedb.Index.btree() });
    await table.createIndex('label', { config: lancedb.Index.bitmap(), name: 'label_bitmap' });
    await table.createIndex('text', { config: lancedb.Index.fts({ withPosition: true }) });
    await table.createIndex('vector', { config: lancedb.Index.ivfPq({ numPartitions: 2, numSubVectors: 2, distanceType: 'l2' }) });
    const list = await table.listIndices();
    const names = list.map((i) => i.name).sort();
    assert.deepEqual(names, ['id_idx', 'label_bitmap', 'text_idx', 'vector_idx']);
    const byName = Object.fromEntries(list.map((i) => [i.name, i]));
    assert.deepEqual(byName.id_idx.columns, ['id']);
    const stats = await table.indexStats('vector_idx');
    assert.equal(stats?.numIndexedRows, 300);
    assert.equal(await table.indexStats('nope'), undefined);

    const found = await table.search('quick', 'fts').limit(5).toArray();
    assert.equal(found.length, 5);
    assert.ok(found.every((r) => String(r.text).includes('quick')));

    // Structured full-text queries (phalanx-version 0.3.0).
    const matched = await table
      .search(new lancedb.MatchQuery('quick fox', 'text', { operator: lancedb.Operator.And }))
      .limit(500)
      .toArray();
    assert.equal(matched.length, 150);
    const phrase = await table.search(new lancedb.PhraseQuery('brown fox', 'text')).limit(500).toArray();
    assert.equal(phrase.length, 150);
    const bool = await table
      .search(
        new lancedb.BooleanQuery([
          [lancedb.Occur.Must, new lancedb.MatchQuery('lazy', 'text')],
          [lancedb.Occur.MustNot, new lancedb.MatchQuery('quick', 'text')],
        ]),
      )
      .limit(500)
      .toArray();
    assert.equal(bool.length, 150);
    assert.ok(bool.every((r) => String(r.text).startsWith('lazy')));

    const nearest = await table.vectorSearch([7, 14, 1, 0.5]).nprobes(2).refineFactor(5).limit(1).toArray();
    assert.equal(Number(nearest[0].id), 7);

    await table.dropIndex('label_bitmap');
    assert.deepEqual((await table.listIndices()).map((i) => i.name).sort(), ['id_idx', 'text_idx', 'vector_idx']);
    await assert.rejects(table.dropIndex('label_bitmap'), /not found/i);
  });

  it('builds an HNSW index and a label-list index', async () => {
    const schema = new arrow.Schema([
      ...vectorSchema.fields,
      new arrow.Field('tags', new arrow.List(new arrow.Field('item', new arrow.Utf8(), true)), true),
    ]);
    const table = await db.createTable(
      'hnsw',
      rows(0, 300).map((r) => ({ ...r, tags: [`t${r.id % 3}`] })),
      { schema },
    );
    await table.createIndex('vector', { config: lancedb.Index.hnswSq({ numPartitions: 1, distanceType: 'l2' }) });
    await table.createIndex('tags', { config: lancedb.Index.labelList() });
    const types = Object.fromEntries((await table.listIndices()).map((i) => [i.name, i.indexType]));
    assert.equal(Object.keys(types).length, 2);
    const nearest = await table.vectorSearch([10, 20, 1, 0.5]).limit(1).toArray();
    assert.equal(Number(nearest[0].id), 10);
    assert.equal(await table.countRows("array_has_any(tags, ['t1'])"), 100);
  });

  it('lists versions, checks out and restores an older version', async () => {
    const table = await db.createTable('ver', rows(0, 2), { schema: vectorSchema });
    const v1 = await table.version();
    await table.add(rows(2, 2));
    await table.add(rows(4, 2));
    const versions = await table.listVersions();
    assert.ok(versions.length >= 3);
    assert.ok(versions.every((v) => v.timestamp instanceof Date));
    await table.checkout(v1);
    assert.equal(await table.countRows(), 2);
    await table.restore();
    await table.checkoutLatest();
    assert.equal(await table.countRows(), 2);
    assert.ok((await table.version()) > v1);
  });

  it('adds, alters and drops columns', async () => {
    const table = await db.createTable('cols', rows(0, 3), { schema: vectorSchema });
    await table.addColumns([{ name: 'double_id', valueSql: 'id * 2' }]);
    const got = await table.query().where('id = 2').select(['double_id']).toArray();
    assert.equal(Number(got[0].double_id), 4);
    await table.alterColumns([{ path: 'double_id', rename: 'twice' }]);
    await table.dropColumns(['label']);
    const names = (await table.schema()).fields.map((f) => f.name);
    assert.deepEqual(names, ['id', 'text', 'vector', 'twice']);
  });

  it('renames and drops tables, reports stats and query plans', async () => {
    const table = await db.createTable('old_name', rows(0, 4), { schema: vectorSchema });
    const stats = await table.stats();
    assert.equal(stats.numRows, 4);
    const plan = await table.query().where('id > 1').explainPlan();
    assert.match(plan, /LanceRead|LanceScan|Filter|filter/i);
    await db.renameTable('old_name', 'new_name');
    assert.ok((await db.tableNames()).includes('new_name'));
    assert.equal(await (await db.openTable('new_name')).countRows(), 4);
    await db.createNamespace(['archive']);
    await db.renameTable('new_name', 'moved', { newNamespacePath: ['archive'] });
    assert.deepEqual(await db.tableNames(['archive']), ['moved']);
    await db.renameTable('moved', 'new_name', { namespacePath: ['archive'], newNamespacePath: ['archive'] });
    assert.deepEqual(await db.tableNames(['archive']), ['new_name']);
    await db.dropTable('new_name', ['archive']);
    await db.createTable('new_name', rows(0, 1), { schema: vectorSchema });
    await db.dropTable('new_name');
    assert.ok(!(await db.tableNames()).includes('new_name'));
    await assert.rejects(db.openTable('new_name'), /not found/i);
  });

  it('maps bad requests to client errors and needs a write key to write', async () => {
    const table = await db.createTable('errs', rows(0, 2), { schema: vectorSchema });
    await assert.rejects(table.countRows('no_such_column > 1'), /400|no_such_column/i);
    await assert.rejects(table.query().where('id >>> 1').toArray(), /400/);
    const reader = await lancedb.connect(`db://${tenant.name}`, { apiKey: tenant.readKey, hostOverride: gw.url });
    const ro = await reader.openTable('errs');
    assert.equal(await ro.countRows(), 2);
    await assert.rejects(ro.add(rows(5, 1)), /403/);
    reader.close();
  });
});
