import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TableStorage } from '../src/engine/storage/table-storage.service';
import { Api, eventually, forEachCatalog, newTenant, startGateway, TestGateway, withPgAdmin } from './helpers/gateway';

forEachCatalog('health and readiness', (kind) => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway(kind);
  });
  after(() => gw.close());

  it('serves /healthz and /readyz without credentials', async () => {
    const api = new Api(gw.url);
    const live = await api.get('/healthz');
    assert.equal(live.status, 200);
    assert.equal(live.body.status, 'ok');
    const ready = await api.get('/readyz');
    assert.equal(ready.status, 200);
    assert.equal(ready.body.status, 'ready');
  });

  it('/readyz asks the stores at most once in a burst of checks, sequential or concurrent', async () => {
    const storage = gw.app.get(TableStorage);
    const original = storage.probe.bind(storage);
    let probes = 0;
    storage.probe = async () => {
      probes++;
      return original();
    };
    try {
      const api = new Api(gw.url);
      for (let i = 0; i < 20; i++) assert.equal((await api.get('/readyz')).status, 200);
      const together = await Promise.all(Array.from({ length: 10 }, () => api.get('/readyz')));
      assert.deepEqual(
        together.map((r) => r.status),
        Array(10).fill(200),
      );
      assert.ok(probes <= 1, `${probes} store probes for 30 readiness checks`);
    } finally {
      storage.probe = original;
    }
  });

  it('/readyz still fails while a store does not answer (within the few seconds a good probe stands), and recovers at once', async () => {
    const storage = gw.app.get(TableStorage);
    const original = storage.probe.bind(storage);
    const api = new Api(gw.url);
    assert.equal((await api.get('/readyz')).status, 200);
    let probes = 0;
    storage.probe = async () => {
      probes++;
      return { default: 's3://lgw: AccessDenied (HTTP 403)' };
    };
    try {
      const failed = await eventually(
        async () => {
          const r = await api.get('/readyz');
          return r.status === 503 && r;
        },
        160,
        50,
      );
      assert.match(failed.body.detail ?? failed.text, /table storage unavailable: profile 'default': s3:\/\/lgw: AccessDenied/);
      // A failing store is asked again at every check, not taken as failing for a while.
      const before = probes;
      assert.equal((await api.get('/readyz')).status, 503);
      assert.equal(probes, before + 1);
    } finally {
      storage.probe = original;
    }
    assert.equal((await api.get('/readyz')).status, 200);
  });

  it('echoes a client x-request-id and generates one otherwise', async () => {
    const api = new Api(gw.url);
    assert.equal((await api.get('/healthz', { 'x-request-id': 'trace-123' })).headers.get('x-request-id'), 'trace-123');
    assert.match((await api.get('/healthz')).headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
  });

  it('answers unknown routes with the error body', async () => {
    const res = await new Api(gw.url).get('/v1/no/such/route');
    assert.equal(res.status, 404);
    assert.equal(res.body.type, '/errors/not-found-error');
    assert.equal(typeof res.body.code, 'number');
  });
});

describe('catalog database outage [postgres]', () => {
  let gw: TestGateway;
  const allow = (on: boolean) =>
    withPgAdmin(async (c) => {
      await c.query(`ALTER DATABASE "${gw.pgDatabase}" ALLOW_CONNECTIONS ${on}`);
      if (!on) {
        await c.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, [gw.pgDatabase]);
      }
    });

  before(async () => {
    gw = await startGateway('postgres', { DB_CONNECT_TIMEOUT_MS: '1000' });
  });
  after(async () => {
    await allow(true);
    await gw.close();
  });

  it('answers 503 (never 500) while Postgres is unreachable, and recovers without a restart', async () => {
    const t = await newTenant(gw);
    assert.equal((await t.api.post('/v1/namespace/before/create', {})).status, 200);
    await allow(false);
    try {
      const ready = await new Api(gw.url).get('/readyz');
      assert.equal(ready.status, 503);
      assert.equal(ready.body.code, 17);
      assert.equal(ready.body.title, 'Slow down');
      for (const res of [await t.api.get('/v1/namespace/%24/list'), await t.api.post('/v1/namespace/during/create', {})]) {
        assert.equal(res.status, 503, res.text);
        assert.equal(res.body.type, '/errors/service-unavailable');
        assert.equal(res.body.code, 17);
        assert.ok(!/at \w+ \(/.test(res.text), 'no stack trace in the body');
      }
    } finally {
      await allow(true);
    }
    await eventually(async () => (await new Api(gw.url).get('/readyz')).status === 200);
    const list = await t.api.get('/v1/namespace/%24/list');
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.namespaces, ['before'], 'the committed namespace survived; the failed create left nothing');
  });
});
