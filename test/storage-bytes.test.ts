import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as lancedb from '@lancedb/lancedb';
import * as arrow from 'apache-arrow';
import { UsageMeter } from '../src/modules/metering/usage-meter.service';
import { UsageRefresher } from '../src/modules/usage/usage-refresher.service';
import { UsageRepository } from '../src/modules/metering/usage.repository';
import { UnitOfWork } from '../src/platform/db/unit-of-work';
import { expectProblem } from './helpers/assertions';
import {
  Api,
  CATALOG_KINDS,
  forEachCatalog,
  idPath,
  newTenant,
  operator,
  startGateway,
  twoReplicas,
  Tenant,
  TEST_STORAGE,
  TestGateway,
} from './helpers/gateway';
import * as stored from './helpers/stored';

/**
 * Storage counted from real bytes (docs/usage-and-quotas.md): a database's `storage_bytes` is every byte under its
 * tables' locations on the store (all versions, indices, deletion files), measured by the storage refresher, with the
 * current version's bytes beside it; what writes through the gateway add counts at once (between two measurements
 * the figure is the last measurement plus what was written since), so max_storage_bytes refuses the very next write
 * of a database over it. Also: the official remote client's nprobes(n) above the engine's default of 20.
 */
const ARROW = 'application/vnd.apache.arrow.stream';
const DIM = 16;
const today = () => new Date().toISOString().slice(0, 10);

const rows = (from: number, n: number) =>
  Array.from({ length: n }, (_, i) => ({
    id: from + i,
    label: `row-${from + i}-${'x'.repeat(24)}`,
    vector: Array.from({ length: DIM }, (_, j) => Math.sin((from + i) * (j + 1))),
  }));
const schema = new arrow.Schema([
  new arrow.Field('id', new arrow.Int64(), true),
  new arrow.Field('label', new arrow.Utf8(), true),
  new arrow.Field('vector', new arrow.FixedSizeList(DIM, new arrow.Field('item', new arrow.Float32(), true)), true),
]);
/** Small rows (an id and a short name), for the quota's body that alone fits 1 KiB. */
const small = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ id: from + i, name: `n${from + i}` }));
const smallSchema = new arrow.Schema([new arrow.Field('id', new arrow.Int32(), true), new arrow.Field('name', new arrow.Utf8(), true)]);
const smallIpc = (from: number, n: number): Buffer =>
  Buffer.from(arrow.tableToIPC(lancedb.makeArrowTable(small(from, n), { schema: smallSchema }), 'stream'));

forEachCatalog('storage counted from real bytes', (kind) => {
  let gw: TestGateway;

  before(async () => {
    // Nothing in the background: the test flushes and measures when it says so.
    gw = await startGateway(kind, {
      USAGE_FLUSH_INTERVAL_SECONDS: '3600',
      USAGE_REFRESH_INTERVAL_SECONDS: '0',
      AUTH_CACHE_TTL_MS: '0',
      RECLAIM_INTERVAL_SECONDS: '0',
    });
  });
  after(async () => {
    await gw?.close();
  });

  const remote = (t: Tenant) => lancedb.connect(`db://${t.name}`, { apiKey: t.writeKey, hostOverride: gw.url });
  const usageToday = async (t: Tenant) => {
    const r = await operator(gw).get(`/admin/v1/databases/${t.name}/usage?from=${today()}`);
    assert.equal(r.status, 200, r.text);
    return r.body.periods[0] as { storage_bytes: number | null; current_version_bytes: number | null };
  };
  /** The database's storage figure now (top-storage: last measurement plus what was written since, as flushed). */
  const storageNow = async (t: Tenant) => {
    const r = await operator(gw).get('/admin/v1/usage/top-storage?limit=1000');
    assert.equal(r.status, 200, r.text);
    return r.body.databases.find((d: { database: string }) => d.database === t.name) as
      { storage_bytes: number; current_version_bytes: number; tables: number } | undefined;
  };
  const location = async (t: Tenant, table: string) => {
    const r = await t.reader.post(`/v1/table/${idPath(table)}/describe`, {});
    assert.equal(r.status, 200, r.text);
    return r.body.location as string;
  };
  const currentBytes = async (t: Tenant, table: string) => {
    const r = await t.api.post(`/v1/table/${idPath(table)}/stats`, {});
    assert.equal(r.status, 200, r.text);
    return r.body.total_bytes as number;
  };
  const arrowPost = (t: Tenant, p: string, body: Buffer) => t.api.post(p, body, { 'content-type': ARROW });
  const measure = () => gw.app.get(UsageRefresher).runOnce();

  it('after overwrites and a delete, storage_bytes is the bytes on the store (within 5%), beside the smaller current version', async () => {
    const t = await newTenant(gw);
    const db = await remote(t);
    try {
      const table = await db.createTable('probe', rows(0, 2000), { schema });
      for (let i = 1; i <= 5; i++) await table.add(rows(i * 10_000, 2000), { mode: 'overwrite' });
      await table.delete('id % 2 = 0');
      assert.equal(await table.countRows(), 1000);
    } finally {
      db.close();
    }
    const round = await measure();
    assert.ok(round.scanned >= 1, JSON.stringify(round));

    const onStore = await stored.bytesUnder(await location(t, 'probe'));
    const day = await usageToday(t);
    assert.ok(day.storage_bytes !== null && day.current_version_bytes !== null, JSON.stringify(day));
    const ratio = day.storage_bytes! / onStore;
    assert.ok(
      Math.abs(ratio - 1) <= 0.05,
      `storage_bytes ${day.storage_bytes} vs ${onStore} bytes on the store (ratio ${ratio.toFixed(3)})`,
    );
    // The current version reads one overwrite's data files (half its rows deleted): a sixth of what the store holds.
    assert.equal(day.current_version_bytes, await currentBytes(t, 'probe'));
    assert.ok(day.current_version_bytes! * 3 < day.storage_bytes!, `current ${day.current_version_bytes} vs stored ${day.storage_bytes}`);
    const now = await storageNow(t);
    assert.deepEqual(now, {
      database: t.name,
      storage_bytes: day.storage_bytes,
      current_version_bytes: day.current_version_bytes,
      tables: 1,
    });

    // The CSV carries both figures.
    const csv = await operator(gw).get(`/admin/v1/databases/${t.name}/usage?from=${today()}`, { accept: 'text/csv' });
    const [header, line] = csv.text.trim().split('\r\n');
    const cols = header.split(',');
    const cells = line.split(',');
    assert.equal(Number(cells[cols.indexOf('storage_bytes')]), day.storage_bytes);
    assert.equal(Number(cells[cols.indexOf('current_version_bytes')]), day.current_version_bytes);
  });

  it('counts what gateway writes add at once, before any measurement; the next measurement replaces the estimate', async () => {
    const t = await newTenant(gw);
    const db = await remote(t);
    try {
      const table = await db.createTable('grow', rows(0, 2000), { schema });
      await gw.app.get(UsageMeter).flush();
      const afterCreate = (await storageNow(t))?.storage_bytes ?? 0;
      const data = await currentBytes(t, 'grow');
      // Not measured yet: the figure is what the create wrote (its data files), no more than is on the store.
      assert.ok(afterCreate >= data, `after the create: ${afterCreate} counted, ${data} data bytes`);
      const onStoreNow = await stored.bytesUnder(await location(t, 'grow'));
      assert.ok(afterCreate <= onStoreNow, `${afterCreate} counted, ${onStoreNow} on the store`);

      // An update has no body, and rewrites the rows it changes: counted too.
      await table.update({ where: 'id < 1000', values: { label: 'changed' } });
      await gw.app.get(UsageMeter).flush();
      const afterUpdate = (await storageNow(t))!.storage_bytes;
      assert.ok(afterUpdate > afterCreate, `after the update: ${afterUpdate} (was ${afterCreate})`);

      // An index build: its files count as soon as it is built.
      await table.createIndex('vector', { config: lancedb.Index.ivfPq({ numPartitions: 2, numSubVectors: 4 }) });
      await gw.app.get(UsageMeter).flush();
      const afterIndex = (await storageNow(t))!.storage_bytes;
      assert.ok(afterIndex > afterUpdate, `after the index: ${afterIndex} (was ${afterUpdate})`);
    } finally {
      db.close();
    }
    // The measurement replaces the estimate with the bytes on the store (not added to it).
    await measure();
    const onStore = await stored.bytesUnder(await location(t, 'grow'));
    assert.equal((await storageNow(t))!.storage_bytes, onStore);
  });

  it("a soft-dropped table's bytes stay in the database's figure until it is purged", async () => {
    const t = await newTenant(gw);
    const patched = await operator(gw).request('PATCH', `/admin/v1/databases/${t.name}`, { drop_profile: 'soft' });
    assert.equal(patched.status, 200, patched.text);
    const key = await operator(gw).post(`/admin/v1/databases/${t.name}/api-keys`, { role: 'admin' });
    const admin = new Api(gw.url, { 'x-api-key': key.body.api_key, 'x-service-database': t.name });
    const db = await remote(t);
    try {
      await db.createTable('kept', rows(0, 500), { schema });
      await db.createTable('dropped', rows(0, 1500), { schema });
    } finally {
      db.close();
    }
    await measure();
    const keptBytes = await stored.bytesUnder(await location(t, 'kept'));
    const droppedBytes = await stored.bytesUnder(await location(t, 'dropped'));
    assert.equal((await storageNow(t))!.storage_bytes, keptBytes + droppedBytes);

    const drop = await t.api.post(`/v1/table/${idPath('dropped')}/drop`, {});
    assert.equal(drop.status, 200, drop.text);
    assert.equal((await storageNow(t))!.storage_bytes, keptBytes + droppedBytes, 'still on the store: still counted');
    const [entry] = (await admin.post('/v1/dropped_tables/list', {})).body.dropped_tables;
    assert.equal(entry.storage_bytes, droppedBytes);
    const purged = await admin.post(`/v1/dropped_tables/${entry.id}/purge`, {});
    assert.ok(purged.status < 300, purged.text);
    assert.equal((await storageNow(t))!.storage_bytes, keptBytes, 'purged: no longer counted');
  });

  it('keeps what was written during a measurement on top of it (never behind the store), until the next one', async () => {
    const t = await newTenant(gw);
    const db = await remote(t);
    try {
      await db.createTable('race', rows(0, 500), { schema });
    } finally {
      db.close();
    }
    await measure();
    const loc = await location(t, 'race');
    const measured = await stored.bytesUnder(loc);
    assert.equal((await storageNow(t))!.storage_bytes, measured);

    // A write flushed before the claim is replaced by the measurement; one flushed after the claim (another replica's,
    // say, while this one lists the store) stays on top of it.
    const repo = gw.app.get(UsageRepository);
    const uow = gw.app.get(UnitOfWork);
    const relative = stored.relative(gw.config.storageRoot, loc);
    const flush = (seq: number, bytes: number) => uow.run(() => repo.applyFlush(`race-${t.name}`, seq, [], [], [[relative, bytes]]));
    await flush(1, 1000);
    const due = await repo.claimDue('race-owner', 1000, 24 * 3600_000, 60_000);
    const claimed = due.find((c) => c.location === relative)!;
    for (const other of due) if (other !== claimed) await repo.releaseLease(other.tableId, 'race-owner');
    assert.ok(claimed, 'the written table is due');
    assert.equal(claimed.writtenBytes, 1000);
    await flush(2, 700);
    await repo.recordScan(claimed, 'race-owner', { bytes: measured, currentBytes: 1, rows: 500 });
    assert.equal((await storageNow(t))!.storage_bytes, measured + 700);
    // The late write made the table due again: the next measurement replaces it too.
    await measure();
    assert.equal((await storageNow(t))!.storage_bytes, measured);
  });

  it('max_storage_bytes refuses the very next write of a database over it; a database under it still writes', async () => {
    const over = await newTenant(gw);
    const under = await newTenant(gw);
    for (const t of [over, under]) {
      const db = await remote(t);
      try {
        await db.createTable('fresh', small(0, 2000), { schema: smallSchema });
      } finally {
        db.close();
      }
    }
    // No flush, no measurement: what this replica saw written counts at once.
    const op = operator(gw);
    assert.equal((await op.request('PATCH', `/admin/v1/databases/${over.name}`, { quotas: { max_storage_bytes: 1024 } })).status, 200);
    assert.equal((await op.request('PATCH', `/admin/v1/databases/${under.name}`, { quotas: { max_storage_bytes: 1 << 30 } })).status, 200);

    const body = smallIpc(5000, 10);
    assert.ok(body.length < 1024, `a 10-row body alone fits the quota (${body.length} bytes)`);
    const refused = await arrowPost(over, `/v1/table/${idPath('fresh')}/insert`, body);
    expectProblem(refused, 403, 15, { msg: /quota exceeded: database '[^']+' has max_storage_bytes = 1024; it stores \d+ bytes/ });
    // The official client is refused too, and nothing was written.
    const db = await remote(over);
    try {
      const table = await db.openTable('fresh');
      await assert.rejects(table.add(small(6000, 10)), /max_storage_bytes|403|quota/i);
      assert.equal(await table.countRows(), 2000);
    } finally {
      db.close();
    }
    // Across a flush and a measurement the database stays over it.
    await measure();
    expectProblem(await arrowPost(over, `/v1/table/${idPath('fresh')}/insert`, body), 403, 15, { msg: 'max_storage_bytes' });

    const ok = await arrowPost(under, `/v1/table/${idPath('fresh')}/insert`, body);
    assert.equal(ok.status, 200, ok.text);
    assert.equal(Number((await under.reader.post(`/v1/table/${idPath('fresh')}/count_rows`, {})).text), 2010);
  });

  it("answers the official remote client's nprobes above and below 20; a minimum above the maximum is a 400", async () => {
    const t = await newTenant(gw);
    const db = await remote(t);
    try {
      const table = await db.createTable('probes', rows(0, 1000), { schema });
      await table.createIndex('vector', { config: lancedb.Index.ivfPq({ numPartitions: 4, numSubVectors: 4 }) });
      const q = rows(7, 1)[0].vector;
      for (const n of [30, 5, 20, 64]) {
        const found = await table.vectorSearch(q).nprobes(n).limit(3).toArray();
        assert.equal(found.length, 3, `nprobes(${n})`);
      }
      // (The client checks each bound against the other's current value itself: the maximum goes first.)
      const bounded = await table.vectorSearch(q).maximumNprobes(40).minimumNprobes(25).limit(3).toArray();
      assert.equal(bounded.length, 3);
    } finally {
      db.close();
    }
    const vector = rows(7, 1)[0].vector;
    const bad = await t.api.post(`/v1/table/${idPath('probes')}/query`, { vector, k: 3, minimum_nprobes: 9, maximum_nprobes: 3 });
    expectProblem(bad, 400, 13, { msg: 'minimum_nprobes' });
    const unbounded = await t.api.post(`/v1/table/${idPath('probes')}/query`, { vector, k: 3, minimum_nprobes: 30, maximum_nprobes: 0 });
    assert.equal(unbounded.status, 200, unbounded.text);
  });
});

describe(
  'storage counted from real bytes: two replicas [postgres]',
  {
    skip: !CATALOG_KINDS.includes('postgres')
      ? 'needs the postgres catalog'
      : TEST_STORAGE === 's3'
        ? 'the second replica would need the S3 pass store options (covered on local disk)'
        : false,
  },
  () => {
    let pair: Awaited<ReturnType<typeof twoReplicas>>;
    let a: TestGateway;
    let b: TestGateway;

    before(async () => {
      pair = await twoReplicas('lgw_bytes', {
        USAGE_FLUSH_INTERVAL_SECONDS: '3600',
        USAGE_REFRESH_INTERVAL_SECONDS: '0',
        AUTH_CACHE_TTL_MS: '0',
      });
      ({ a, b } = pair);
    });
    after(() => pair?.close());

    it("counts one replica's writes in the other's quota checks from its next flush, before any measurement", async () => {
      const t = await newTenant(a);
      const db = await lancedb.connect(`db://${t.name}`, { apiKey: t.writeKey, hostOverride: a.url });
      try {
        await db.createTable('fresh', small(0, 2000), { schema: smallSchema });
      } finally {
        db.close();
      }
      assert.equal(
        (await operator(a).request('PATCH', `/admin/v1/databases/${t.name}`, { quotas: { max_storage_bytes: 1024 } })).status,
        200,
      );
      const body = smallIpc(5000, 10);
      const insert = (gw: TestGateway) =>
        fetch(`${gw.url}/v1/table/${idPath('fresh')}/insert`, {
          method: 'POST',
          headers: { ...t.api.headers, 'content-type': ARROW },
          body,
        }).then(async (r) => ({ status: r.status, headers: r.headers, text: await r.text() }));
      const parsed = async (r: { status: number; headers: Headers; text: string }) => ({ ...r, body: JSON.parse(r.text) });
      // a saw the create: refused there at once.
      expectProblem(await parsed(await insert(a)), 403, 15, { msg: 'max_storage_bytes' });
      // Once a flushed, b (which saw nothing written and measured nothing) refuses too.
      await a.app.get(UsageMeter).flush();
      expectProblem(await parsed(await insert(b)), 403, 15, { msg: 'max_storage_bytes' });
      assert.equal(Number((await t.reader.post(`/v1/table/${idPath('fresh')}/count_rows`, {})).text), 2000);
    });
  },
);
