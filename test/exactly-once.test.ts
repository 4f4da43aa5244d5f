import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, it } from 'node:test';
import * as lancedb from '@lancedb/lancedb';
import * as arrow from 'apache-arrow';
import { CATALOG_DB, CatalogDb } from '../src/platform/db/catalog-db';
import { UnitOfWork } from '../src/platform/db/unit-of-work';
import { AuditRepository } from '../src/modules/audit/audit.repository';
import { PendingLocationsRepository } from '../src/platform/cluster/pending-locations.repository';
import { TableVersionsRepository } from '../src/modules/catalog/versions/table-versions.repository';
import { TablesRepository } from '../src/modules/catalog/tables/tables.repository';
import { LanceEngine } from '../src/engine/lance/lance-engine';
import {
  Api,
  CatalogKind,
  createPgDatabase,
  forEachCatalog,
  newTenant,
  operator,
  Reply,
  startGateway,
  Tenant,
  TestGateway,
} from './helpers/gateway';
import { expectProblem } from './helpers/assertions';

/**
 * Exactly-once writes (docs/idempotency.md): what happens after an engine commit never turns the answer into one the
 * official client retries; a create answered with an error leaves nothing; a retried write (same x-request-id, or
 * Idempotency-Key) is answered with the first attempt's answer and has no second effect, on any replica.
 */
const ARROW = 'application/vnd.apache.arrow.stream';

const ipc = (from: number, n: number): Buffer =>
  Buffer.from(
    arrow.tableToIPC(
      new arrow.Table({
        id: arrow.vectorFromArray(
          Array.from({ length: n }, (_, i) => from + i),
          new arrow.Float64(),
        ),
        label: arrow.vectorFromArray(
          Array.from({ length: n }, (_, i) => `row-${from + i}`),
          new arrow.Utf8(),
        ),
      }),
      'stream',
    ),
  );

const rows = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ id: from + i, label: `row-${from + i}` }));

/** POSTs raw bytes (or JSON) with the tenant's headers. */
async function send(base: string, tenant: Tenant, p: string, body: Buffer | object, headers: Record<string, string> = {}): Promise<Reply> {
  const isBytes = Buffer.isBuffer(body);
  const r = await fetch(base + p, {
    method: 'POST',
    headers: { ...tenant.api.headers, 'content-type': isBytes ? ARROW : 'application/json', ...headers },
    body: isBytes ? body : JSON.stringify(body),
  });
  const text = await r.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = text;
  }
  return { status: r.status, headers: r.headers, body: parsed, text };
}

const count = async (t: Tenant, table: string) => (await t.api.post(`/v1/table/${table}/count_rows`, {})).body as number;

/** Makes every piece of bookkeeping after an engine commit fail, as if the catalog had gone away right after it. */
function breakBookkeeping(gw: TestGateway): { armed: boolean; restore(): void } {
  const state = { armed: false, restore: () => undefined as void };
  const fail = (what: string) => () => Promise.reject(new Error(`catalog database unavailable (injected: ${what})`));
  const patches: Array<[object, string]> = [
    [gw.app.get(AuditRepository), 'confirm'],
    [gw.app.get(PendingLocationsRepository), 'deleteOwned'],
    [gw.app.get(TableVersionsRepository), 'tableAt'],
    [gw.app.get(TablesRepository), 'markMaterialized'],
  ];
  const saved = patches.map(([o, k]) => (o as Record<string, unknown>)[k]);
  // (A pending record deleted inside a registration's transaction is before the commit: that one is left alone.)
  const uow = gw.app.get(UnitOfWork);
  patches.forEach(([o, k], i) => {
    (o as Record<string, unknown>)[k] = (...args: unknown[]) =>
      state.armed && !uow.inProgress ? fail(k)() : (saved[i] as (...a: unknown[]) => unknown).apply(o, args);
  });
  // And a listener that fails first of all: the fault sits between the engine's commit and the bookkeeping.
  const listeners = (gw.app.get(LanceEngine) as unknown as { writeListeners: Array<() => Promise<unknown>> }).writeListeners;
  const failing = () => (state.armed ? fail('after commit')() : Promise.resolve());
  listeners.unshift(failing);
  state.restore = () => {
    patches.forEach(([o, k], i) => ((o as Record<string, unknown>)[k] = saved[i]));
    listeners.splice(listeners.indexOf(failing), 1);
  };
  return state;
}

/** A TCP proxy in front of Postgres that can be cut (open connections destroyed, new ones refused) and restored. */
async function catalogProxy(target: URL): Promise<{ url: string; cut(): void; restore(): void; close(): Promise<void> }> {
  let down = false;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    if (down) return client.destroy();
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined).on('close', () => sockets.delete(s));
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const u = new URL(target.toString());
  u.hostname = '127.0.0.1';
  u.port = String((server.address() as net.AddressInfo).port);
  return {
    url: u.toString(),
    cut: () => {
      down = true;
      for (const s of sockets) s.destroy();
    },
    restore: () => {
      down = false;
    },
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((r) => server.close(() => r()));
    },
  };
}

/** An HTTP proxy to `target` that forwards each request but, while `dropping`, cuts the client off instead of answering. */
async function droppingProxy(target: string): Promise<{ url: string; dropping: boolean; forwarded: number; close(): Promise<void> }> {
  const state = { url: '', dropping: true, forwarded: 0, close: async () => undefined as void };
  const server = http.createServer((req, res) => {
    const up = http.request(target + req.url, { method: req.method, headers: req.headers }, (answer) => {
      state.forwarded++;
      if (state.dropping) {
        answer.resume();
        answer.on('end', () => res.socket?.destroy());
        return;
      }
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    up.on('error', () => res.socket?.destroy());
    req.pipe(up);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  state.url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  state.close = () => new Promise((r) => server.close(() => r()));
  return state;
}

async function outcomeRows(gw: TestGateway): Promise<Array<{ state: string; scope_key: string }>> {
  const db = gw.app.get<CatalogDb>(CATALOG_DB);
  return db.read(`SELECT state, scope_key FROM request_outcomes ORDER BY created_at`, []);
}

forEachCatalog('exactly-once writes', (kind: CatalogKind) => {
  let gw: TestGateway;
  let tenant: Tenant;
  let remote: lancedb.Connection;

  before(async () => {
    gw = await startGateway(kind, { IDEMPOTENCY_WAIT_MS: '1500' });
    tenant = await newTenant(gw);
    remote = await lancedb.connect(`db://${tenant.name}`, { apiKey: tenant.writeKey, hostOverride: gw.url });
  });
  after(async () => {
    remote?.close();
    await gw.close();
  });

  it('a committed write whose bookkeeping fails is answered 2xx: insert, merge_insert, update, delete, overwrite, streamed create', async () => {
    await remote.createTable('kept', rows(0, 10));
    const faults = breakBookkeeping(gw);
    try {
      faults.armed = true;
      const ins = await send(gw.url, tenant, '/v1/table/kept/insert/', ipc(100, 5));
      assert.equal(ins.status, 200, ins.text);
      const merged = await send(
        gw.url,
        tenant,
        '/v1/table/kept/merge_insert/?on=id&when_matched_update_all=true&when_not_matched_insert_all=true',
        ipc(104, 3),
      );
      assert.equal(merged.status, 200, merged.text);
      const upd = await tenant.api.post('/v1/table/kept/update/', { updates: [['label', "'changed'"]], predicate: 'id < 3' });
      assert.equal(upd.status, 200, upd.text);
      const del = await tenant.api.post('/v1/table/kept/delete/', { predicate: 'id = 9' });
      assert.equal(del.status, 200, del.text);
      const created = await send(gw.url, tenant, '/v1/table/fresh/create/', ipc(0, 4));
      assert.equal(created.status, 200, created.text);
      const over = await send(gw.url, tenant, '/v1/table/fresh/insert/?mode=overwrite', ipc(50, 2));
      assert.equal(over.status, 200, over.text);
      // Through the official client too: each add answered once, so each is in exactly once.
      const table = await remote.openTable('kept');
      for (let i = 0; i < 3; i++) await table.add(rows(1000 + 10 * i, 10));
      table.close();
    } finally {
      faults.armed = false;
      faults.restore();
    }
    // 10, + 5 inserted, + 2 new by the merge (104 was inserted just before), - 1 deleted, + 30 added.
    assert.equal(await count(tenant, 'kept'), 10 + 5 + 2 - 1 + 30);
    assert.equal((await tenant.api.post('/v1/table/kept/count_rows', { predicate: "label = 'changed'" })).body, 3);
    assert.equal(await count(tenant, 'fresh'), 2);
  });

  it('a registration that committed although the catalog call failed answers 2xx; one that did not leaves nothing', async () => {
    const uow = gw.app.get(UnitOfWork);
    const run = uow.run.bind(uow);
    // Armed once the table's data is written (the engine tells its listeners): the next unit is the registration.
    let armed = false;
    const listeners = (gw.app.get(LanceEngine) as unknown as { writeListeners: Array<() => Promise<unknown>> }).writeListeners;
    const arm = async () => {
      armed = true;
    };
    listeners.unshift(arm);
    // The connection breaks after COMMIT was sent: committed, but the caller is told it failed.
    // Only the registration's unit: the gateway's background units (flushes, leases) run through uow.run too, and on
    // a loaded machine one of them could take the injected failure instead (it did, in CI).
    const registering = () => /registerWritten/.test(new Error().stack ?? '');
    uow.run = (async (fn: () => Promise<unknown>) => {
      if (uow.inProgress) return run(fn); // a nested unit joins the outer one
      const mine = registering();
      const r = await run(fn);
      if (armed && mine) {
        armed = false;
        throw new Error('Connection terminated unexpectedly (injected after commit)');
      }
      return r;
    }) as typeof uow.run;
    try {
      const r = await send(gw.url, tenant, '/v1/table/after_commit/create/', ipc(0, 3));
      assert.equal(r.status, 200, r.text);
    } finally {
      uow.run = run;
    }
    assert.equal(await count(tenant, 'after_commit'), 3);

    // The connection breaks before COMMIT: nothing registered, so nothing is listed, described or stored.
    const dbFolder = path.dirname(
      String((await tenant.api.post('/v1/table/after_commit/describe', {})).body.location).replace(/^file:\/\//, ''),
    );
    const foldersBefore = fs.readdirSync(dbFolder).sort();
    uow.run = (async (fn: () => Promise<unknown>) => {
      const outer = !uow.inProgress && registering();
      return run(async () => {
        const r = await fn();
        if (armed && outer) {
          armed = false;
          throw new Error('Connection terminated unexpectedly (injected before commit)');
        }
        return r;
      });
    }) as typeof uow.run;
    try {
      const r = await send(gw.url, tenant, '/v1/table/before_commit/create/', ipc(0, 3));
      assert.ok(r.status >= 500, r.text);
    } finally {
      uow.run = run;
      listeners.splice(listeners.indexOf(arm), 1);
    }
    const listed = await tenant.api.get('/v1/table/');
    assert.ok(!JSON.stringify(listed.body).includes('before_commit'), listed.text);
    expectProblem(await tenant.api.post('/v1/table/before_commit/describe', {}), 404, 4);
    const folder = path.dirname(
      String((await tenant.api.post('/v1/table/after_commit/describe', {})).body.location).replace(/^file:\/\//, ''),
    );
    assert.deepEqual(fs.readdirSync(folder).sort(), foldersBefore, 'no folder left behind');
  });

  it('a retried insert with the same x-request-id lands once: the answer dropped by a proxy, the retry answered from the first attempt', async () => {
    await remote.createTable('retried', rows(0, 2));
    const proxy = await droppingProxy(gw.url);
    try {
      const headers = { ...tenant.api.headers, 'content-type': ARROW, 'x-request-id': `retry-${kind}-1` };
      await assert.rejects(
        fetch(`${proxy.url}/v1/table/retried/insert/`, { method: 'POST', headers, body: ipc(10, 7) }),
        'the first answer is dropped',
      );
      assert.equal(proxy.forwarded, 1);
      proxy.dropping = false;
      const again = await fetch(`${proxy.url}/v1/table/retried/insert/`, { method: 'POST', headers, body: ipc(10, 7) });
      assert.equal(again.status, 200);
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      const first = (await again.json()) as { version: number };
      assert.equal(first.version, 2);
    } finally {
      await proxy.close();
    }
    assert.equal(await count(tenant, 'retried'), 9, 'the rows once');
    // A new request id is a new write.
    const other = await send(gw.url, tenant, '/v1/table/retried/insert/', ipc(20, 1), { 'x-request-id': `retry-${kind}-2` });
    assert.equal(other.status, 200);
    assert.equal(other.headers.get('idempotent-replayed'), null);
    assert.equal(await count(tenant, 'retried'), 10);
  });

  it('a retried streamed create is answered with the first answer, not "already exists"; another body under its id is a 422', async () => {
    const rid = { 'x-request-id': `create-${kind}-1` };
    const first = await send(gw.url, tenant, '/v1/table/made_once/create/', ipc(0, 5), rid);
    assert.equal(first.status, 200, first.text);
    const again = await send(gw.url, tenant, '/v1/table/made_once/create/', ipc(0, 5), rid);
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(again.body, first.body);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    expectProblem(await send(gw.url, tenant, '/v1/table/made_once/create/', ipc(0, 6), rid), 422, 13);
    // Without the id, the same create is the "already exists" the client expects.
    expectProblem(await send(gw.url, tenant, '/v1/table/made_once/create/', ipc(0, 5)), 409, 5);
    assert.equal(await count(tenant, 'made_once'), 5);
  });

  it('Idempotency-Key: the same key and body answer the first outcome; another body or route is 422; a malformed key 400', async () => {
    await remote.createTable('keyed', rows(0, 1));
    const key = { 'idempotency-key': `order-${kind}-42` };
    const a = await send(gw.url, tenant, '/v1/table/keyed/insert/', ipc(10, 3), key);
    const b = await send(gw.url, tenant, '/v1/table/keyed/insert/', ipc(10, 3), key);
    assert.equal(a.status, 200);
    assert.equal(b.status, 200);
    assert.deepEqual(b.body, a.body);
    assert.equal(b.headers.get('idempotent-replayed'), 'true');
    assert.equal(await count(tenant, 'keyed'), 4);
    expectProblem(await send(gw.url, tenant, '/v1/table/keyed/insert/', ipc(10, 4), key), 422, 13, { msg: /different request/ });
    expectProblem(await tenant.api.post('/v1/table/keyed/delete/', { predicate: 'id = 0' }, key), 422, 13);
    assert.equal(await count(tenant, 'keyed'), 4, 'nothing changed by the refused reuses');
    expectProblem(await send(gw.url, tenant, '/v1/table/keyed/insert/', ipc(10, 1), { 'idempotency-key': '' }), 400, 13);
    // JSON writes: a namespace created once, its retry answered the same, and another key of the database is its own.
    const ns1 = await tenant.api.post('/v1/namespace/orders/create', {}, { 'idempotency-key': `ns-${kind}` });
    const ns2 = await tenant.api.post('/v1/namespace/orders/create', {}, { 'idempotency-key': `ns-${kind}` });
    assert.equal(ns1.status, 200, ns1.text);
    assert.deepEqual([ns2.status, ns2.body], [ns1.status, ns1.body]);
    const third = await tenant.api.post('/v1/namespace/orders/create', {}, { 'idempotency-key': `ns-${kind}-b` });
    expectProblem(third, 409, 2);
  });

  it('concurrent attempts with one key: one runs, the other waits and gets its answer', async () => {
    await remote.createTable('racing', rows(0, 1));
    const key = { 'idempotency-key': `race-${kind}` };
    const [a, b] = await Promise.all([
      send(gw.url, tenant, '/v1/table/racing/insert/', ipc(10, 5), key),
      send(gw.url, tenant, '/v1/table/racing/insert/', ipc(10, 5), key),
    ]);
    assert.deepEqual([a.status, b.status], [200, 200], `${a.text} ${b.text}`);
    assert.deepEqual(a.body, b.body);
    assert.equal(await count(tenant, 'racing'), 6);
  });

  it('a failed write withdraws its claim (its retry runs); a claim still running is waited for (503 past the wait); a lapsed one is 409', async () => {
    await remote.createTable('claims', rows(0, 1));
    const rid = { 'x-request-id': `claims-${kind}-1` };
    expectProblem(await send(gw.url, tenant, '/v1/table/claims/insert/', Buffer.from('not arrow'), rid), 400, 13);
    const ok = await send(gw.url, tenant, '/v1/table/claims/insert/', ipc(5, 2), rid);
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.headers.get('idempotent-replayed'), null, 'the failed attempt left no answer behind');
    assert.equal(await count(tenant, 'claims'), 3);

    const db = gw.app.get<CatalogDb>(CATALOG_DB);
    const key = `r:POST /v1/table/claims/insert/ claims-${kind}-1`;
    // The answer is stored just after it is sent (gathered with others for a few milliseconds).
    for (let i = 0; i < 100; i++) {
      const [row] = await db.prisma.$queryRawUnsafe<{ state: string }[]>(`SELECT state FROM request_outcomes WHERE scope_key = $1`, key);
      if (row?.state === 'done') break;
      await new Promise((r) => setTimeout(r, 20));
    }
    await db.prisma.$executeRawUnsafe(
      `UPDATE request_outcomes SET state = 'running', lease_until = now() + interval '1 minute' WHERE scope_key = $1`,
      key,
    );
    expectProblem(await send(gw.url, tenant, '/v1/table/claims/insert/', ipc(5, 2), rid), 503, 21, { msg: /still running/ });
    await db.prisma.$executeRawUnsafe(`UPDATE request_outcomes SET lease_until = now() - interval '1 second' WHERE scope_key = $1`, key);
    expectProblem(await send(gw.url, tenant, '/v1/table/claims/insert/', ipc(5, 2), rid), 409, 14, { msg: /outcome is unknown/ });
    assert.equal(await count(tenant, 'claims'), 3, 'never applied twice');
  });

  it('reads keep no outcome, whatever their request id', async () => {
    const before = (await outcomeRows(gw)).length;
    await remote.createTable('reads', rows(0, 3));
    const afterCreate = (await outcomeRows(gw)).length;
    for (let i = 0; i < 3; i++) {
      assert.equal((await tenant.api.post('/v1/table/reads/count_rows', {}, { 'x-request-id': `read-${kind}-${i}` })).status, 200);
      assert.equal((await tenant.api.post('/v1/table/reads/describe', {}, { 'x-request-id': `read-${kind}-${i}` })).status, 200);
    }
    assert.equal((await outcomeRows(gw)).length, afterCreate);
    assert.ok(afterCreate >= before);
  });
});

forEachCatalog('exactly-once writes across replicas', (kind: CatalogKind) => {
  it('a retry on another replica is answered from the first one (same catalog, same tables)', async (t) => {
    if (kind === 'embedded') return t.skip('the embedded catalog belongs to one process');
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'lgw-once-'));
    const pg = await createPgDatabase();
    const shared = { DATA_DIR: dataDir, STORAGE_ROOT: path.join(dataDir, 'tables'), DATABASE_URL: pg.url };
    const a = await startGateway(kind, shared);
    const b = await startGateway(kind, shared);
    try {
      const tenant = await newTenant(a);
      const remote = await lancedb.connect(`db://${tenant.name}`, { apiKey: tenant.writeKey, hostOverride: a.url });
      await remote.createTable('shared', rows(0, 2));
      remote.close();
      const headers = { 'x-request-id': `replica-${Date.now()}` };
      const first = await send(a.url, tenant, '/v1/table/shared/insert/', ipc(10, 4), headers);
      const second = await send(b.url, tenant, '/v1/table/shared/insert/', ipc(10, 4), headers);
      assert.equal(first.status, 200);
      assert.equal(second.status, 200);
      assert.deepEqual(second.body, first.body);
      assert.equal(second.headers.get('idempotent-replayed'), 'true');
      assert.equal(await count(tenant, 'shared'), 6);
    } finally {
      await b.close();
      await a.close();
      await pg.drop().catch(() => undefined);
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('the catalog cut right after an engine commit: the write is answered 2xx, and its version adopted once the catalog is back', async (t) => {
    if (kind === 'embedded') return t.skip('the embedded catalog runs in-process: no connection to cut');
    const pg = await createPgDatabase();
    const proxy = await catalogProxy(new URL(pg.url));
    const gwCut = await startGateway(kind, { DATABASE_URL: proxy.url, DB_CONNECT_TIMEOUT_MS: '500' });
    try {
      const op = operator(gwCut);
      const name = `managed_${Date.now()}`;
      assert.equal((await op.post('/admin/v1/databases', { name, managed_versioning: true })).status, 201);
      const key = (await op.post(`/admin/v1/databases/${name}/api-keys`, { role: 'write' })).body.api_key as string;
      const api = new Api(gwCut.url, { 'x-api-key': key, 'x-service-database': name });
      const tenant: Tenant = { name, writeKey: key, readKey: key, api, reader: api };
      const remote = await lancedb.connect(`db://${name}`, { apiKey: key, hostOverride: gwCut.url });
      await remote.createTable('cut', rows(0, 3));
      remote.close();
      // Cut the catalog the moment the engine has committed (first of the listeners told of the commit).
      const listeners = (gwCut.app.get(LanceEngine) as unknown as { writeListeners: Array<() => Promise<unknown>> }).writeListeners;
      let armed = true;
      listeners.unshift(async () => {
        if (armed) proxy.cut();
      });
      const r = await send(gwCut.url, tenant, '/v1/table/cut/insert/', ipc(10, 4));
      armed = false;
      proxy.restore();
      assert.equal(r.status, 200, r.text);
      assert.equal(await count(tenant, 'cut'), 7);
      // The catalog learns of the new version once it is back (the adoption owed is retried).
      let listed: number[] = [];
      let last = '';
      for (let i = 0; i < 60 && !listed.includes(r.body.version); i++) {
        await new Promise((res) => setTimeout(res, 250));
        const v = await tenant.api.post('/v1/table/cut/version/list', {});
        last = v.text;
        listed = ((v.body?.versions ?? []) as Array<{ version: number }>).map((x) => x.version);
      }
      assert.ok(listed.includes(r.body.version), `version ${r.body.version} adopted: ${last}`);
    } finally {
      proxy.restore();
      await gwCut.close();
      await proxy.close();
      await pg.drop().catch(() => undefined);
    }
  });
});
