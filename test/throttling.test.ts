import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Api, eventually, forEachCatalog, newTenant, operator, Reply, startGateway, TestGateway, withPgAdmin } from './helpers/gateway';
import { PrivateRedis } from './helpers/redis';
import { startThrottledReplicas, ThrottledReplicas } from './helpers/replicas';

function expectSlowDown(r: Reply): void {
  assert.equal(r.status, 503, r.text);
  assert.equal(r.body.type, '/errors/service-unavailable');
  assert.equal(r.body.title, 'Slow down');
  assert.equal(r.body.code, 21);
  assert.ok(Number(r.headers.get('retry-after')) >= 1, `Retry-After: ${r.headers.get('retry-after')}`);
}

const list = (api: Api) => api.get('/v1/namespace/%24/list');
const setLimit = (gw: TestGateway, db: string, rateLimit: unknown) =>
  operator(gw).request('PATCH', `/admin/v1/databases/${db}`, { rate_limit: rateLimit });

async function statuses(n: number, send: () => Promise<Reply>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await send()).status);
  return out;
}

forEachCatalog('throttling, in-memory store', (kind) => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway(kind, { RATE_LIMIT_LIMIT: '4', RATE_LIMIT_WINDOW_MS: '60000' });
  });
  after(() => gw.close());

  it('applies the default limit per database and answers 503 Slow down with Retry-After', async () => {
    const t = await newTenant(gw);
    assert.deepEqual(await statuses(4, () => list(t.api)), [200, 200, 200, 200]);
    expectSlowDown(await list(t.api));
    // Counted per database across routes, and before the handler: a throttled write changes nothing.
    expectSlowDown(await t.api.post('/v1/namespace/never/create', {}));
    assert.equal((await new Api(gw.url).get('/healthz')).status, 200, 'health is never throttled');
    assert.equal((await new Api(gw.url).get('/readyz')).status, 200, 'readiness is never throttled');
  });

  it('one database over its limit does not slow another', async () => {
    const noisy = await newTenant(gw);
    const quiet = await newTenant(gw);
    await statuses(5, () => list(noisy.api));
    expectSlowDown(await list(noisy.api));
    assert.deepEqual(await statuses(4, () => list(quiet.api)), [200, 200, 200, 200]);
  });

  it("takes a database's own limit from the operator and applies a change at once here", async () => {
    const op = operator(gw);
    const created = await op.post('/admin/v1/databases', { name: `lim_${kind}`, rate_limit: { limit: 2, window_ms: 60000 } });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(created.body.rate_limit, { limit: 2, window_ms: 60000 });
    const key = (await op.post(`/admin/v1/databases/lim_${kind}/api-keys`, { role: 'read' })).body.api_key;
    const api = new Api(gw.url, { 'x-api-key': key, 'x-service-database': `lim_${kind}` });
    assert.deepEqual(await statuses(3, () => list(api)), [200, 200, 503]);

    const raised = await setLimit(gw, `lim_${kind}`, { limit: 50, window_ms: 60000 });
    assert.equal(raised.status, 200, raised.text);
    assert.deepEqual(raised.body.rate_limit, { limit: 50, window_ms: 60000 });
    assert.equal((await list(api)).status, 200, 'a raised limit lifts the block');
    const reset = await setLimit(gw, `lim_${kind}`, null);
    assert.equal(reset.body.rate_limit, null, 'null returns to the defaults');
    assert.equal((await op.request('PATCH', `/admin/v1/databases/lim_${kind}`, { rate_limit: { limit: 0, window_ms: 5 } })).status, 400);
    assert.equal((await op.request('PATCH', `/admin/v1/databases/lim_${kind}`, {})).status, 400);
    assert.equal((await op.request('PATCH', '/admin/v1/databases/nope', { rate_limit: null })).status, 404);
  });
});

describe('throttling across replicas (two processes, shared Redis, shared Postgres)', () => {
  let a: TestGateway;
  let b: ThrottledReplicas['b'];
  let replicas: ThrottledReplicas;
  before(async () => {
    replicas = await startThrottledReplicas();
    ({ a, b } = replicas);
  });
  after(() => replicas.close());

  it('counts exactly across two gateways', async () => {
    const t = await newTenant(a);
    assert.equal((await setLimit(a, t.name, { limit: 10, window_ms: 60000 })).status, 200);
    // Neither replica has looked this database up yet, so both read the new limit from the catalog (no wait).
    const viaA = t.api;
    const viaB = new Api(b.url, t.api.headers);
    const results: number[] = [];
    for (let i = 0; i < 7; i++) {
      results.push((await list(viaA)).status);
      results.push((await list(viaB)).status);
    }
    assert.equal(results.filter((s) => s === 200).length, 10, JSON.stringify(results));
    assert.equal(results.filter((s) => s === 503).length, 4);
    expectSlowDown(await list(viaB));
  });

  it('applies a changed limit on every replica within 1 second', async () => {
    const t = await newTenant(a);
    const viaB = new Api(b.url, t.api.headers);
    assert.equal((await list(viaB)).status, 200); // B has cached the database's (default) limit
    assert.equal((await setLimit(a, t.name, { limit: 1, window_ms: 60000 })).status, 200);
    // B's cached lookup (AUTH_CACHE_TTL_MS, 500 ms) expires within 1 s; polled for up to 2 s so a loaded machine does
    // not fail it. Under the old limit every request passes; the first 503 is the new limit.
    await eventually(async () => (await list(viaB)).status === 503, 40, 50);
    expectSlowDown(await list(viaB));
  });

  it('keeps neighbours apart across replicas', async () => {
    const noisy = await newTenant(a);
    const quiet = await newTenant(a);
    await setLimit(a, noisy.name, { limit: 3, window_ms: 60000 });
    await setLimit(a, quiet.name, { limit: 3, window_ms: 60000 });
    // Neither replica has looked these databases up yet: both read the new limits from the catalog (no wait).
    await statuses(4, () => list(new Api(b.url, noisy.api.headers)));
    expectSlowDown(await list(noisy.api));
    assert.deepEqual(await statuses(3, () => list(new Api(a.url, quiet.api.headers))), [200, 200, 200]);
  });
});

describe('Redis outages', () => {
  let redis: PrivateRedis;
  let open: TestGateway;
  let closed: TestGateway;
  before(async () => {
    redis = await PrivateRedis.create();
    const env = { REDIS_URL: redis.url, RATE_LIMIT_LIMIT: '3', RATE_LIMIT_WINDOW_MS: '60000' };
    open = await startGateway('postgres', env);
    closed = await startGateway('postgres', { ...env, RATE_LIMIT_FAIL_CLOSED: 'true' });
  });
  after(async () => {
    await open.close();
    await closed.close();
    await redis.stop();
  });

  it('serves unthrottled while Redis is down (fail-open), fails closed when asked, and recovers by itself', async () => {
    const t = await newTenant(open);
    const c = await newTenant(closed);
    assert.deepEqual(await statuses(4, () => list(t.api)), [200, 200, 200, 503], 'Redis counts while up');

    await redis.stop();
    const ready = await new Api(open.url).get('/readyz');
    assert.equal(ready.status, 200, 'Redis does not make the gateway unready');
    await eventually(async () => ready.body.redis === 'down' || (await new Api(open.url).get('/readyz')).body.redis === 'down');
    const u = await newTenant(open);
    assert.deepEqual(await statuses(6, () => list(u.api)), [200, 200, 200, 200, 200, 200], 'fail-open: no limit, no error');
    const failClosed = await list(c.api);
    assert.equal(failClosed.status, 503, failClosed.text);
    assert.equal(failClosed.body.code, 17);

    await redis.start();
    await eventually(async () => (await new Api(open.url).get('/readyz')).body.redis === 'ready', 200, 100);
    const v = await newTenant(open);
    assert.deepEqual(await statuses(4, () => list(v.api)), [200, 200, 200, 503], 'limits are enforced again');
    await eventually(async () => (await list(c.api)).status === 200, 200, 100);
  });
});

describe('Postgres connection loss', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway('postgres');
  });
  after(() => gw.close());

  it("answers requests after the gateway's connections are killed, never with a 500", async () => {
    const t = await newTenant(gw);
    assert.equal((await t.api.post('/v1/namespace/kept/create', {})).status, 200);
    const seen: number[] = [];
    for (let round = 0; round < 3; round++) {
      await withPgAdmin((c) =>
        c.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, [gw.pgDatabase]),
      );
      for (let i = 0; i < 5; i++) seen.push((await t.api.post(`/v1/namespace/r${round}_${i}/create`, {})).status);
    }
    assert.ok(!seen.includes(500), JSON.stringify(seen));
    assert.ok(
      seen.every((s) => s === 200 || s === 503),
      JSON.stringify(seen),
    );
    const listed = (await list(t.api)).body.namespaces as string[];
    for (const [i, s] of seen.entries()) {
      const name = `r${Math.floor(i / 5)}_${i % 5}`;
      if (s === 200) assert.ok(listed.includes(name), `acknowledged ${name} is kept`);
    }
    assert.ok(listed.includes('kept'));
  });
});
