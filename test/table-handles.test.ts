import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, it } from 'node:test';
import * as lancedb from '@lancedb/lancedb';
import * as arrow from 'apache-arrow';
import { LanceEngine } from '../src/engine/lance/lance-engine';
import { handleBytes } from '../src/engine/lance/lance-session';
import { TableStorage } from '../src/engine/storage/table-storage.service';
import { APP_CONFIG, AppConfig } from '../src/platform/config/config';
import { createPgDatabase, eventually, forEachCatalog, newTenant, operator, startGateway, Tenant, TestGateway } from './helpers/gateway';
import { appendRows } from './helpers/lance';

/**
 * Kept table handles (LanceEngine, TABLE_HANDLE_CACHE_BYTES): reads reuse an open table, yet see every commit — made
 * through another replica or straight to storage by a namespace-mode client — at the next read; a pinned version
 * stays pinned; dropping a table or deleting its database closes its handles. Many tables stay open at once within
 * the handles' memory bound, all of them on one Lance session, and idle ones are closed with the session let go.
 */
const rows = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ id: from + i, vector: [from + i, 1] }));
/** An Arrow IPC file of `n` ids from `from`, as the engine's native writes take it. */
const ipc = (from: number, n: number) =>
  Buffer.from(arrow.tableToIPC(arrow.tableFromArrays({ id: Int32Array.from({ length: n }, (_, i) => from + i) }), 'file'));
const idsOf = async (t: lancedb.Table) =>
  ((await t.query().toArray()) as Array<{ id: number }>).map((r) => Number(r.id)).sort((x, y) => x - y);

forEachCatalog('kept table handles', (kind) => {
  let a: TestGateway;
  let b: TestGateway | undefined;
  let t: Tenant;
  let pgDrop: (() => Promise<void>) | undefined;
  const storageRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'lgw-handles-'));

  before(async () => {
    // Two replicas on one catalog and one storage root (Postgres only: the embedded catalog is single-process).
    const env: Record<string, string> = { STORAGE_ROOT: storageRoot };
    if (kind === 'postgres') {
      const pg = await createPgDatabase();
      pgDrop = pg.drop;
      env.DATABASE_URL = pg.url;
    }
    a = await startGateway(kind, env);
    if (kind === 'postgres') b = await startGateway(kind, env);
    t = await newTenant(a);
  });
  /** Engines of their own (another handle cache and session) on the gateway's storage, with other handle settings. */
  const engines: LanceEngine[] = [];
  const engineWith = (gw: TestGateway, tableHandles: Partial<AppConfig['tableHandles']>): LanceEngine => {
    const config = gw.app.get<AppConfig>(APP_CONFIG);
    const engine = new LanceEngine(gw.app.get(TableStorage), { ...config, tableHandles: { ...config.tableHandles, ...tableHandles } });
    engines.push(engine);
    return engine;
  };
  /** `n` tables of two rows each (ids i, i + 1), written through the engine (no catalog), under a folder of their own. */
  const tablesOf = async (engine: LanceEngine, n: number): Promise<{ folder: string; locations: string[] }> => {
    const folder = `handles-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
    const locations = Array.from({ length: n }, (_, i) => `${folder}/t${i}.lance`);
    for (const [i, location] of locations.entries()) await engine.create(location, ipc(i, 2), 'create');
    return { folder, locations };
  };

  after(async () => {
    for (const e of engines) e.onModuleDestroy();
    await b?.close();
    await a?.close();
    await pgDrop?.();
    fs.rmSync(storageRoot, { recursive: true, force: true });
  });

  const countOn = async (gw: TestGateway, table: string, body: Record<string, unknown> = {}) => {
    const res = await fetch(`${gw.url}/v1/table/${table}/count_rows`, {
      method: 'POST',
      headers: { 'x-api-key': t.writeKey, 'x-service-database': t.name, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    assert.equal(res.status, 200, await res.clone().text());
    return Number(await res.text());
  };

  it('a commit through another replica, or straight to storage, is seen by the next read of a kept handle', async () => {
    const remoteA = await lancedb.connect(`db://${t.name}`, { apiKey: t.writeKey, hostOverride: a.url });
    const table = await remoteA.createTable('shared', rows(0, 5));
    const reader = b ?? a;
    assert.equal(await countOn(reader, 'shared'), 5);
    const engine = reader.app.get(LanceEngine);
    assert.ok(engine.keptHandles() >= 1, 'the read kept its handle');
    const kept = engine.keptHandles();

    await table.add(rows(5, 3)); // through replica A
    assert.equal(await countOn(reader, 'shared'), 8, 'the next read on the other replica sees the commit');
    assert.equal(engine.keptHandles(), kept, 'without opening another handle');

    // A namespace-mode client writes the data itself, bypassing every replica.
    const described = await t.api.post('/v1/table/shared/describe', {});
    await appendRows(described.body.location, rows(8, 2));
    assert.equal(await countOn(reader, 'shared'), 10);
    table.close();
    remoteA.close();
  });

  it('a pinned version stays pinned while the latest moves on', async () => {
    const remote = await lancedb.connect(`db://${t.name}`, { apiKey: t.writeKey, hostOverride: a.url });
    const table = await remote.createTable('pinned', rows(0, 4));
    const v1 = await table.version();
    assert.equal(await countOn(a, 'pinned', { version: v1 }), 4);
    await table.add(rows(4, 6));
    assert.equal(await countOn(a, 'pinned', { version: v1 }), 4, 'the pinned handle still reads its version');
    assert.equal(await countOn(a, 'pinned'), 10);
    const old = await remote.openTable('pinned');
    await old.checkout(v1);
    assert.equal((await old.query().toArray()).length, 4, 'a checked-out query reads the pinned version');
    assert.equal(await countOn(a, 'pinned'), 10, 'and the latest handle is not moved by it');
    old.close();
    table.close();
    remote.close();
  });

  it('commit listeners hear of commits only: a one-chunk create once, reads of the table never', async () => {
    // The listener is the managed-versions adoption (a catalog query per call): reads have nothing to adopt.
    const engine = a.app.get(LanceEngine);
    const told: string[] = [];
    engine.onWritten(async (location) => void told.push(location));
    const remote = await lancedb.connect(`db://${t.name}`, { apiKey: t.writeKey, hostOverride: a.url });
    const table = await remote.createTable('listened', rows(0, 3));
    assert.equal(told.length, 1, `one commit, one call (got ${told.length})`);
    const location = told[0];
    const version = await table.version();
    assert.equal(await engine.latestVersion(location), version);
    assert.equal(await engine.readTable(location, (tb) => tb.countRows()), 3);
    assert.equal(told.length, 1, 'reading the version and the rows told nobody');
    await table.add(rows(3, 2));
    assert.equal(told.length, 2);
    table.close();
    remote.close();
  });

  it('a streamed create writes its chunks through one handle: a version per chunk, the listeners told once, at the end', async () => {
    const engine = a.app.get(LanceEngine);
    const told: string[] = [];
    engine.onWritten(async (location) => void told.push(location));
    const location = `stream-writer/${Date.now()}.lance`;
    const chunk = (from: number) =>
      Buffer.from(arrow.tableToIPC(arrow.tableFromArrays({ id: Int32Array.from({ length: 4 }, (_, i) => from + i) }), 'file'));
    const writer = await engine.streamWriter(location);
    const versions = [await writer.write(chunk(0)), await writer.write(chunk(4)), await writer.write(chunk(8))];
    assert.deepEqual(versions, [1, 2, 3]);
    assert.equal(told.filter((l) => l === location).length, 0, 'nobody is told while the writes go on');
    await writer.close();
    await writer.close();
    assert.deepEqual(
      told.filter((l) => l === location),
      [location],
      'told once, when the writer closes',
    );
    assert.equal(await engine.latestVersion(location), 3);
    const ids = await engine.readTable(location, async (tb) =>
      ((await tb.query().toArray()) as Array<{ id: number }>).map((r) => Number(r.id)),
    );
    assert.deepEqual(
      ids.sort((x, y) => x - y),
      Array.from({ length: 12 }, (_, i) => i),
    );
    await assert.rejects(writer.write(chunk(12)), /after close/);

    // A chunk the engine refuses fails its write; closing after it tells nobody when nothing was committed.
    const refused = await engine.streamWriter(`stream-writer/${Date.now()}-bad.lance`);
    await assert.rejects(refused.write(Buffer.from('not an arrow file')));
    await refused.close();
    assert.equal(told.filter((l) => l.endsWith('-bad.lance')).length, 0);
  });

  it('a query answers from where the catalog says the table is now, not from where it was last found', async () => {
    // A query starts where the table was last found while the catalog confirms it (TableReadsService.query).
    const remote = await lancedb.connect(`db://${t.name}`, { apiKey: t.writeKey, hostOverride: a.url });
    const ids = async () =>
      ((await (await remote.openTable('moving')).query().toArray()) as Array<{ id: number }>)
        .map((r) => Number(r.id))
        .sort((x, y) => x - y);
    await remote.createTable('moving', rows(0, 3));
    assert.deepEqual(await ids(), [0, 1, 2]);
    assert.deepEqual(await ids(), [0, 1, 2], 'the second query, started early, answers the same');

    await remote.dropTable('moving');
    await assert.rejects(ids(), /not found|does not exist/i, 'a dropped table is not answered from where it was');
    await remote.createTable('moving', rows(100, 2));
    assert.deepEqual(await ids(), [100, 101], 'a table made anew under the name is answered from its own data');
    assert.deepEqual(await ids(), [100, 101]);
    remote.close();
  });

  it('dropping a table and deleting a database close their kept handles', async () => {
    const other = await newTenant(a);
    const remote = await lancedb.connect(`db://${other.name}`, { apiKey: other.writeKey, hostOverride: a.url });
    await remote.createTable('doomed', rows(0, 2));
    await remote.createTable('kept', rows(0, 2));
    const engine = a.app.get(LanceEngine);
    const countOther = async (table: string) => {
      const r = await fetch(`${a.url}/v1/table/${table}/count_rows`, {
        method: 'POST',
        headers: { 'x-api-key': other.writeKey, 'x-service-database': other.name, 'content-type': 'application/json' },
        body: '{}',
      });
      return Number(await r.text());
    };
    assert.equal(await countOther('doomed'), 2);
    assert.equal(await countOther('kept'), 2);
    const before = engine.keptHandles();
    await remote.dropTable('doomed');
    await eventually(async () => engine.keptHandles() === before - 1);
    assert.equal((await operator(a).delete(`/admin/v1/databases/${other.name}`)).status, 204);
    await eventually(async () => engine.keptHandles() === before - 2);
    remote.close();
  });

  it('more tables than the old count bound (128) stay open, and reading them all again opens none', async () => {
    const engine = a.app.get(LanceEngine);
    const { folder, locations } = await tablesOf(engine, 200);
    const opened = engine.openedHandles();
    for (const location of locations) assert.equal(await engine.read(location, (t) => t.countRows()), 2);
    assert.equal(engine.openedHandles() - opened, 200, 'one handle opened a table');
    assert.ok(engine.keptHandles() >= 200, `kept ${engine.keptHandles()}`);
    for (const [i, location] of locations.entries()) assert.deepEqual(await engine.read(location, idsOf), [i, i + 1]);
    assert.equal(engine.openedHandles() - opened, 200, 'the second round of reads reopened nothing');
    const bound = a.app.get<AppConfig>(APP_CONFIG).tableHandles.maxBytes;
    assert.ok(engine.keptHandleBytes() >= 200 * handleBytes(1) && engine.keptHandleBytes() <= bound, `${engine.keptHandleBytes()} bytes`);
    // Removing their folder closes their handles.
    const kept = engine.keptHandles();
    await a.app.get(TableStorage).remove(folder);
    assert.equal(engine.keptHandles(), kept - 200);
  });

  it('the kept handles are bounded by their estimated memory: the least recently used are closed, a table too large for the bound is not kept', async () => {
    const bound = 5 * handleBytes(1);
    const engine = engineWith(a, { maxBytes: bound });
    const { locations } = await tablesOf(engine, 10);
    for (const location of locations) assert.equal(await engine.read(location, (t) => t.countRows()), 2);
    assert.equal(engine.keptHandles(), 5, 'five handles of one fragment fill the bound');
    assert.equal(engine.keptHandleBytes(), bound);
    const opened = engine.openedHandles();
    await engine.read(locations[9], (t) => t.countRows());
    assert.equal(engine.openedHandles(), opened, 'a recently used table is still open');
    await engine.read(locations[0], (t) => t.countRows());
    assert.equal(engine.openedHandles(), opened + 1, 'the least recently used one was closed');

    // A table of four fragments is sized as such once its statistics are read: it takes the room of more than one.
    for (const from of [10, 20, 30]) await engine.append(locations[1], ipc(from, 1));
    await engine.read(locations[1], (t) => t.countRows());
    await eventually(async () => engine.keptHandleBytes() === handleBytes(4) + 3 * handleBytes(1));
    assert.equal(engine.keptHandles(), 4);

    // Larger than the whole bound: read, then closed.
    const tiny = engineWith(a, { maxBytes: handleBytes(1) + 100 });
    assert.deepEqual(await tiny.read(locations[1], idsOf), [1, 2, 10, 20, 30]);
    await eventually(async () => tiny.keptHandles() === 0);
    assert.deepEqual(await tiny.read(locations[1], idsOf), [1, 2, 10, 20, 30], 'and read again on a handle of its own');
  });

  it('every handle is opened on one Lance session, whose caches hold what the reads of each table loaded', async () => {
    const engine = engineWith(a, {});
    const { locations } = await tablesOf(a.app.get(LanceEngine), 3);
    const empty = engine.sessionStats();
    assert.ok(empty.items === 0 && empty.bytes < 1024 && empty.generation === 1, JSON.stringify(empty));
    await engine.read(locations[0], idsOf);
    const first = await eventually(async () => (engine.sessionStats().items > 0 ? engine.sessionStats() : false));
    await engine.read(locations[1], idsOf);
    await engine.read(locations[2], idsOf);
    // Each table's manifest and file metadata went into the one session: a session per connection would leave it empty.
    await eventually(async () => engine.sessionStats().items >= 3 * first.items);
    assert.ok(engine.sessionStats().bytes > first.bytes);
    assert.equal(engine.sessionStats().generation, 1);
    assert.equal(engine.keptHandles(), 3);
  });

  it('idle handles are closed and the session is let go with them; reads go on with a fresh one', async () => {
    const engine = engineWith(a, { idleMs: 400 });
    const { locations } = await tablesOf(a.app.get(LanceEngine), 3);
    for (const location of locations) await engine.read(location, (t) => t.countRows());
    assert.equal(engine.keptHandles(), 3);
    await eventually(async () => engine.sessionStats().items > 0);
    // One-off reads in the background (the storage refresher's, maintenance's) do not keep the session in use.
    await eventually(async () => {
      if (engine.keptHandles() === 0 && engine.sessionStats().generation === 2) return true;
      await engine.readTable(locations[0], (t) => t.countRows());
      return false;
    });
    assert.equal(engine.keptHandleBytes(), 0);
    const fresh = engine.sessionStats();
    assert.ok(fresh.items === 0 && fresh.bytes < 1024, `the new session holds nothing yet: ${JSON.stringify(fresh)}`);
    assert.deepEqual(await engine.read(locations[2], idsOf), [2, 3]);
    assert.equal(engine.keptHandles(), 1);
  });
});
