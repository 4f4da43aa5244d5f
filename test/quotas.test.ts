import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import * as arrow from 'apache-arrow';
import { UnitOfWork } from '../src/platform/db/unit-of-work';
import { PrismaClient } from '../src/generated/prisma/client';
import { UsageMeter } from '../src/modules/metering/usage-meter.service';
import { UsageRefresher } from '../src/modules/usage/usage-refresher.service';
import { expectProblem } from './helpers/assertions';
import { Api, forEachCatalog, idPath, operator, startGateway, TestGateway } from './helpers/gateway';
import * as stored from './helpers/stored';

/**
 * Quotas per database (docs/usage-and-quotas.md): max_tables (create, declare, register, create_table),
 * max_namespaces, max_rows_per_write and max_storage_bytes are refused with 403 code 15 naming the quota, its limit
 * and the current usage, before anything is written; reads keep working; PATCH changes them; defaults come from
 * QUOTA_* settings.
 */
const ARROW = 'application/vnd.apache.arrow.stream';

function rowsOf(from: number, n: number): Buffer {
  const table = new arrow.Table({
    id: arrow.vectorFromArray(Int32Array.from({ length: n }, (_, i) => from + i)),
    name: arrow.vectorFromArray(
      Array.from({ length: n }, (_, i) => `name-${from + i}`),
      new arrow.Utf8(),
    ),
  });
  return Buffer.from(arrow.tableToIPC(table, 'stream'));
}

/**
 * Counts the catalog statements of the gateway's process from now until restore() (every repository query goes
 * through the unit of work's `db` or `read`).
 */
function countStatements(gw: TestGateway): { readonly statements: number; restore(): void } {
  const uow = gw.app.get(UnitOfWork);
  let statements = 0;
  const dbGetter = Object.getOwnPropertyDescriptor(UnitOfWork.prototype, 'db')!.get!;
  const read = uow.read.bind(uow);
  Object.defineProperty(uow, 'db', { configurable: true, get: () => (statements++, dbGetter.call(uow)) });
  Object.defineProperty(uow, 'read', {
    configurable: true,
    value: (sql: string, params: readonly unknown[]) => (statements++, read(sql, params)),
  });
  return {
    get statements() {
      return statements;
    },
    restore() {
      delete (uow as any).db;
      delete (uow as any).read;
    },
  };
}

forEachCatalog('quotas', (kind) => {
  let gw: TestGateway;
  let api: Api;
  let reader: Api;
  const name = `quota_${kind}`;

  const arrowPost = async (p: string, body: Buffer) => {
    const res = await fetch(gw.url + p, { method: 'POST', headers: { ...api.headers, 'content-type': ARROW }, body });
    const text = await res.text();
    let parsed: any;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    return { status: res.status, headers: res.headers, body: parsed, text };
  };
  const tables = async () => (await reader.get('/v1/table?include_declared=true')).body.tables.sort();
  const countRows = async (t: string) => Number((await reader.post(`/v1/table/${t}/count_rows`, {})).text);
  const folders = () => stored.entries(stored.dbFolder(gw, name));

  before(async () => {
    // AUTH_CACHE_TTL_MS=0: every request looks its key up, and no background work (jobs, reclaimer, refresher,
    // flushes) queries the catalog meanwhile, so catalog statements per request are countable.
    gw = await startGateway(kind, {
      QUOTA_MAX_ROWS_PER_WRITE: '1000',
      USAGE_FLUSH_INTERVAL_SECONDS: '3600',
      USAGE_REFRESH_INTERVAL_SECONDS: '0',
      AUTH_CACHE_TTL_MS: '0',
      JOBS_POLL_INTERVAL_MS: '0',
      RECLAIM_INTERVAL_SECONDS: '0',
      // No background catalog statements among those counted (the event dispatcher's rounds).
      EVENTS_DISPATCH_INTERVAL_MS: '0',
    });
    const op = operator(gw);
    const created = await op.post('/admin/v1/databases', { name, quotas: { max_tables: 2, max_namespaces: 1, max_rows_per_write: 20 } });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(created.body.quotas, { max_tables: 2, max_namespaces: 1, max_storage_bytes: null, max_rows_per_write: 20 });
    const w = await op.post(`/admin/v1/databases/${name}/api-keys`, { role: 'write' });
    const r = await op.post(`/admin/v1/databases/${name}/api-keys`, { role: 'read' });
    api = new Api(gw.url, { 'x-api-key': w.body.api_key, 'x-service-database': name });
    reader = new Api(gw.url, { 'x-api-key': r.body.api_key, 'x-service-database': name });
  });
  after(() => gw?.close());

  it('takes defaults from QUOTA_* and refuses bad quotas', async () => {
    const op = operator(gw);
    const plain = await op.post('/admin/v1/databases', { name: `plain_${kind}` });
    assert.deepEqual(plain.body.quotas, { max_tables: null, max_namespaces: null, max_storage_bytes: null, max_rows_per_write: 1000 });
    expectProblem(await op.post('/admin/v1/databases', { name: `bad_${kind}`, quotas: { max_tables: -1 } }), 400, 13);
    expectProblem(await op.post('/admin/v1/databases', { name: `bad_${kind}`, quotas: { max_table: 3 } }), 400, 13);
    expectProblem(await op.request('PATCH', `/admin/v1/databases/plain_${kind}`, { quotas: { max_rows_per_write: 1.5 } }), 400, 13);
  });

  it('refuses a table past max_tables (create, declare, register, create_table) with nothing written', async () => {
    assert.equal((await arrowPost('/v1/tables/t1', rowsOf(0, 10))).status, 201);
    assert.equal((await api.post(`/v1/table/${idPath('t2')}/declare`, {})).status, 200);
    const before = { tables: await tables(), folders: await folders() };
    assert.deepEqual(before.tables, ['t1', 't2']);

    const refused = await arrowPost('/v1/tables/t3', rowsOf(0, 5));
    expectProblem(refused, 403, 15, { msg: /quota exceeded: database '[^']+' has max_tables = 2; it holds 2 tables/ });
    expectProblem(await api.post(`/v1/table/${idPath('t3')}/declare`, {}), 403, 15, { msg: 'max_tables = 2' });
    expectProblem(await arrowPost(`/v1/table/${idPath('t3')}/create`, rowsOf(0, 5)), 403, 15, { msg: 'max_tables = 2' });
    const t1 = await reader.post(`/v1/table/${idPath('t1')}/describe`, {});
    const relative = stored.relative(stored.dbFolder(gw, name), t1.body.location);
    expectProblem(await api.post(`/v1/table/${idPath('t3')}/register`, { location: relative }), 403, 15, { msg: 'max_tables = 2' });

    assert.deepEqual(await tables(), before.tables, 'no table added');
    assert.deepEqual(await folders(), before.folders, 'no folder made');
    // Reads keep working, and so do writes to existing tables.
    assert.equal(await countRows('t1'), 10);
    assert.equal((await arrowPost('/v1/table/t1/insert', rowsOf(10, 5))).status, 200);
    assert.equal(await countRows('t1'), 15);
  });

  it('refuses a namespace past max_namespaces; an existing one is still kept', async () => {
    assert.equal((await api.post(`/v1/namespace/${idPath('ns1')}/create`, {})).status, 200);
    expectProblem(await api.post(`/v1/namespace/${idPath('ns2')}/create`, {}), 403, 15, {
      msg: /max_namespaces = 1; it holds 1 namespaces/,
    });
    assert.equal((await api.post(`/v1/namespace/${idPath('ns1')}/create`, { mode: 'exist_ok' })).status, 200);
    const listed = await reader.get(`/v1/namespace/${idPath()}/list`);
    assert.deepEqual(listed.body.namespaces, ['ns1']);
  });

  it('refuses a write past max_rows_per_write with nothing written', async () => {
    const version = (await reader.post(`/v1/table/${idPath('t1')}/describe`, {})).body.version;
    expectProblem(await arrowPost('/v1/table/t1/insert', rowsOf(100, 21)), 403, 15, {
      msg: /max_rows_per_write = 20; this write has 21 rows/,
    });
    expectProblem(await arrowPost('/v1/table/t1/merge_insert?on=id&when_not_matched_insert_all=true', rowsOf(100, 21)), 403, 15, {
      msg: 'max_rows_per_write',
    });
    assert.equal(await countRows('t1'), 15);
    assert.equal((await reader.post(`/v1/table/${idPath('t1')}/describe`, {})).body.version, version, 'no version committed');
    // A streamed create stops before writing: room for tables first.
    assert.equal((await operator(gw).request('PATCH', `/admin/v1/databases/${name}`, { quotas: { max_tables: 10 } })).status, 200);
    const folders0 = await folders();
    expectProblem(await arrowPost('/v1/tables/big', rowsOf(0, 25)), 403, 15, { msg: 'max_rows_per_write = 20' });
    assert.ok(!(await tables()).includes('big'));
    assert.deepEqual(await folders(), folders0, 'the refused create left no folder');
    assert.equal((await arrowPost('/v1/table/t1/insert', rowsOf(100, 20))).status, 200);
    assert.equal(await countRows('t1'), 35);
  });

  it('refuses a write past max_storage_bytes (as last measured) with nothing written; reads keep working', async () => {
    await gw.app.get(UsageRefresher).runOnce();
    const top = await operator(gw).get('/admin/v1/usage/top-storage?limit=100');
    const measured = top.body.databases.find((d: any) => d.database === name)?.storage_bytes;
    assert.ok(measured > 0, `storage measured: ${top.text}`);
    const patched = await operator(gw).request('PATCH', `/admin/v1/databases/${name}`, { quotas: { max_storage_bytes: measured + 10 } });
    assert.equal(patched.status, 200, patched.text);
    assert.equal(patched.body.quotas.max_storage_bytes, measured + 10);
    const body = rowsOf(500, 5);
    const refused = await arrowPost('/v1/table/t1/insert', body);
    expectProblem(refused, 403, 15, {
      msg: `max_storage_bytes = ${measured + 10}; it stores ${measured} bytes and this write adds about ${body.length}`,
    });
    expectProblem(await arrowPost('/v1/tables/t4', body), 403, 15, { msg: 'max_storage_bytes' });
    assert.equal(await countRows('t1'), 35);
    assert.ok(!(await tables()).includes('t4'));
    const q = await reader.post(`/v1/table/${idPath('t1')}/query`, { k: 3, filter: 'id >= 0', columns: ['id'] });
    assert.equal(q.status, 200);
    // Back to no limit: the write goes through.
    assert.equal((await operator(gw).request('PATCH', `/admin/v1/databases/${name}`, { quotas: { max_storage_bytes: null } })).status, 200);
    assert.equal((await arrowPost('/v1/table/t1/insert', body)).status, 200);
    assert.equal(await countRows('t1'), 40);
  });

  it('adds no catalog query to reads: a database with every quota set reads like one with none', async () => {
    const op = operator(gw);
    assert.equal(
      (
        await op.request('PATCH', `/admin/v1/databases/${name}`, {
          quotas: { max_storage_bytes: 1 << 30, max_tables: 10, max_namespaces: 10 },
        })
      ).status,
      200,
    );
    const free = `free_${kind}`;
    assert.equal((await op.post('/admin/v1/databases', { name: free, quotas: { max_rows_per_write: null } })).status, 201);
    const fr = await op.post(`/admin/v1/databases/${free}/api-keys`, { role: 'read' });
    const fw = await op.post(`/admin/v1/databases/${free}/api-keys`, { role: 'write' });
    const freeWriter = { 'x-api-key': fw.body.api_key, 'x-service-database': free };
    const created = await fetch(`${gw.url}/v1/tables/t1`, {
      method: 'POST',
      headers: { ...freeWriter, 'content-type': ARROW },
      body: rowsOf(0, 10),
    });
    assert.equal(created.status, 201);
    const freeReader = new Api(gw.url, { 'x-api-key': fr.body.api_key, 'x-service-database': free });

    const counter = countStatements(gw);
    const readsCost = async (r: Api) => {
      await r.post(`/v1/table/${idPath('t1')}/describe`, {}); // warm: data already seen on storage
      const before = counter.statements;
      for (let i = 0; i < 3; i++) {
        assert.equal((await r.post(`/v1/table/t1/count_rows`, {})).status, 200);
        assert.equal((await r.post(`/v1/table/${idPath('t1')}/query`, { k: 3, filter: 'id >= 0', columns: ['id'] })).status, 200);
        assert.equal((await r.post(`/v1/table/${idPath('t1')}/describe`, {})).status, 200);
      }
      return counter.statements - before;
    };
    try {
      // The counter sees the whole process: a background statement (a trim, a flush, a maintenance check) may land in
      // one round, so each side's cost is the least of three rounds.
      let limited = Infinity;
      let unlimited = Infinity;
      for (let round = 0; round < 3; round++) {
        limited = Math.min(limited, await readsCost(reader));
        unlimited = Math.min(unlimited, await readsCost(freeReader));
      }
      assert.ok(limited > 0, 'statements are counted');
      assert.equal(limited, unlimited, `catalog statements for 9 reads: ${limited} with quotas, ${unlimited} without`);
    } finally {
      counter.restore();
    }
  });

  it('marks a table described with a write key for re-measurement with no catalog statement on the read path, and once', async () => {
    const op = operator(gw);
    const db = `marks_${kind}`;
    assert.equal((await op.post('/admin/v1/databases', { name: db, quotas: { max_rows_per_write: null } })).status, 201);
    const keys = await Promise.all(['read', 'write'].map((role) => op.post(`/admin/v1/databases/${db}/api-keys`, { role })));
    const [asReader, asWriter] = keys.map((k) => new Api(gw.url, { 'x-api-key': k.body.api_key, 'x-service-database': db }));
    const created = await fetch(`${gw.url}/v1/tables/t1`, {
      method: 'POST',
      headers: { ...asWriter.headers, 'content-type': ARROW },
      body: rowsOf(0, 10),
    });
    assert.equal(created.status, 201);
    // Measured: no mark left (the create's is cleared by the measurement).
    await gw.app.get(UsageMeter).flush();
    await gw.app.get(UsageRefresher).runOnce();
    const prisma = gw.app.get(PrismaClient);
    const usageRow = async () =>
      (
        await prisma.$queryRawUnsafe<{ id: string; marked: number | null; markedAt: string | null; version: string }[]>(
          `SELECT u.table_id AS id, u.marked, u.marked_at::text AS "markedAt", u.xmin::text AS version
             FROM table_usage u JOIN tables t ON t.id = u.table_id
            JOIN databases d ON d.id = t.database_id WHERE d.name = $1 AND t.name = 't1'`,
          db,
        )
      )[0];
    assert.equal((await usageRow()).marked, null);

    const counter = countStatements(gw);
    const describesCost = async (a: Api) => {
      const before = counter.statements;
      for (let i = 0; i < 5; i++) assert.equal((await a.post(`/v1/table/${idPath('t1')}/describe`, {})).status, 200);
      return counter.statements - before;
    };
    let withWriteKey = Infinity;
    let withReadKey = Infinity;
    try {
      // The least of three rounds (a background statement may land in one, as above).
      for (let round = 0; round < 3; round++) {
        withWriteKey = Math.min(withWriteKey, await describesCost(asWriter));
        withReadKey = Math.min(withReadKey, await describesCost(asReader));
      }
    } finally {
      counter.restore();
    }
    assert.ok(withReadKey > 0, 'statements are counted');
    assert.equal(
      withWriteKey,
      withReadKey,
      `catalog statements for 5 describes: ${withWriteKey} with a write key, ${withReadKey} with a read key`,
    );

    // The next flush marks the table (opened for writing), once: more describes and flushes write its row no more.
    await gw.app.get(UsageMeter).flush();
    const marked = await usageRow();
    assert.equal(marked.marked, 2);
    for (let i = 0; i < 3; i++) {
      assert.equal((await asWriter.post(`/v1/table/${idPath('t1')}/describe`, {})).status, 200);
      await gw.app.get(UsageMeter).flush();
    }
    assert.deepEqual(await usageRow(), marked, 'the marked row is not written again');
    // Only to keep the time of its last open once that is 5 minutes old (a writer keeping its handle is re-measured
    // every 5 minutes within the hour after it): the mark itself stays as it was.
    await prisma.$executeRawUnsafe(`UPDATE table_usage SET touched_at = now() - interval '6 minutes' WHERE table_id = $1::uuid`, marked.id);
    assert.equal((await asWriter.post(`/v1/table/${idPath('t1')}/describe`, {})).status, 200);
    await gw.app.get(UsageMeter).flush();
    const [opened] = await prisma.$queryRawUnsafe<{ fresh: boolean }[]>(
      `SELECT touched_at > now() - interval '1 minute' AS fresh FROM table_usage WHERE table_id = $1::uuid`,
      marked.id,
    );
    assert.equal(opened.fresh, true);
    const after = await usageRow();
    assert.deepEqual([after.marked, after.markedAt], [marked.marked, marked.markedAt]);
  });
});
