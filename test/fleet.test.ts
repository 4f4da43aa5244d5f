import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { TableStorage } from '../src/engine/storage/table-storage.service';
import { NamespacesService } from '../src/modules/catalog/namespaces/namespaces.service';
import { UsageMeter } from '../src/modules/metering/usage-meter.service';
import { expectProblem } from './helpers/assertions';
import { Api, eventually, forEachCatalog, newTenant, operator, startGateway, Tenant, TestGateway } from './helpers/gateway';
import { SHARED_REDIS_URL } from './helpers/redis';

/**
 * What the console's Fleet page reads (issue 35): throttled and failed requests in usage, the fleet's usage over time
 * (GET /admin/v1/usage/history) and the operator's health report (GET /admin/v1/health).
 */
const today = () => new Date().toISOString().slice(0, 10);
const list = (api: Api) => api.get('/v1/namespace/%24/list');

const CSV_HEADER =
  'granularity,start,read_requests,write_requests,requests,rows_written,bytes_ingested,queries,storage_bytes,tables,namespaces,' +
  'current_version_bytes,throttled_requests,failed_requests';

forEachCatalog('fleet: usage outcomes, usage history, operator health', (kind) => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway(kind, {
      REDIS_URL: SHARED_REDIS_URL,
      USAGE_FLUSH_INTERVAL_SECONDS: '3600',
      USAGE_REFRESH_INTERVAL_SECONDS: '0',
    });
  });
  after(() => gw?.close());

  const flush = () => gw.app.get(UsageMeter).flush();

  /** Today's row of a database's usage (day granularity). */
  async function todayOf(name: string): Promise<any> {
    const r = await operator(gw).get(`/admin/v1/databases/${name}/usage?from=${today()}`);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.periods.length, 1, r.text);
    return r.body.periods[0];
  }

  /** The fleet's history for today (day granularity). */
  async function fleetToday(): Promise<any> {
    const r = await operator(gw).get(`/admin/v1/usage/history?from=${today()}`);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.periods.length, 1, r.text);
    return r.body.periods[0];
  }

  it('counts requests refused by the rate limit as throttled, and other 5xx answers as failed', async () => {
    const t = await newTenant(gw);
    const limited = await operator(gw).request('PATCH', `/admin/v1/databases/${t.name}`, { rate_limit: { limit: 2, window_ms: 60000 } });
    assert.equal(limited.status, 200, limited.text);
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await list(t.reader)).status);
    assert.deepEqual(statuses, [200, 200, 503]);
    await flush();
    let row = await todayOf(t.name);
    assert.equal(row.throttled_requests, 1, JSON.stringify(row));
    assert.equal(row.failed_requests, 0, JSON.stringify(row));
    assert.equal(row.read_requests, 3, 'a throttled request is still an answered read');

    // An error inside a handler: a 500, counted as failed (not throttled).
    const other = await newTenant(gw);
    const namespaces = gw.app.get(NamespacesService);
    const original = namespaces.list;
    namespaces.list = async () => {
      throw new Error('injected fault');
    };
    try {
      assert.equal((await list(other.reader)).status, 500);
    } finally {
      namespaces.list = original;
    }
    assert.equal((await list(other.reader)).status, 200);
    await flush();
    row = await todayOf(other.name);
    assert.deepEqual([row.read_requests, row.throttled_requests, row.failed_requests], [2, 0, 1], JSON.stringify(row));

    // The fleet list and the CSV carry both.
    const fleet = await operator(gw).get(`/admin/v1/usage?sort=requests&limit=1000`);
    const mine = fleet.body.databases.find((d: any) => d.database === t.name);
    assert.equal(mine.throttled_requests, 1);
    const csv = await operator(gw).get(`/admin/v1/databases/${t.name}/usage?from=${today()}`, { accept: 'text/csv' });
    const [header, line] = csv.text.trim().split('\r\n');
    assert.match(header, /,current_version_bytes,throttled_requests,failed_requests$/);
    assert.match(line, /,1,0$/);
  });

  it("/admin/v1/usage/history sums every database's counters per period, zero where nothing was counted", async () => {
    await flush();
    const before = await fleetToday();
    const a = await newTenant(gw);
    const b = await newTenant(gw);
    for (let i = 0; i < 3; i++) assert.equal((await list(a.reader)).status, 200);
    for (let i = 0; i < 2; i++) assert.equal((await b.api.post(`/v1/namespace/ns${i}/create`, {})).status, 200);
    await flush();
    const now = await fleetToday();
    assert.equal(now.read_requests - before.read_requests, 3);
    assert.equal(now.write_requests - before.write_requests, 2);
    assert.equal(now.requests - before.requests, 5);
    // The same figures as the databases' own rows added up.
    const fleet = (await operator(gw).get(`/admin/v1/usage?date=${today()}&limit=1000`)).body.databases;
    for (const k of ['read_requests', 'write_requests', 'throttled_requests', 'failed_requests']) {
      assert.equal(
        now[k],
        fleet.reduce((n: number, d: any) => n + d[k], 0),
        k,
      );
    }

    // Per hour: 24 rows by default, the current hour holding what was counted, the others zero.
    const hourly = await operator(gw).get('/admin/v1/usage/history?granularity=hour');
    assert.equal(hourly.status, 200, hourly.text);
    assert.equal(hourly.body.granularity, 'hour');
    assert.equal(hourly.body.periods.length, 24);
    assert.ok(hourly.body.periods.every((p: any) => p.storage_bytes === null));
    assert.equal(
      hourly.body.periods.reduce((n: number, p: any) => n + p.requests, 0),
      now.requests,
    );

    // A range before anything was counted: one zero row per day, nothing measured.
    const empty = await operator(gw).get('/admin/v1/usage/history?from=2020-01-01&to=2020-01-03');
    assert.equal(empty.status, 200, empty.text);
    assert.deepEqual(
      empty.body.periods.map((p: any) => [p.start, p.requests, p.throttled_requests, p.failed_requests, p.storage_bytes]),
      [
        ['2020-01-01T00:00:00.000Z', 0, 0, 0, null],
        ['2020-01-02T00:00:00.000Z', 0, 0, 0, null],
      ],
    );
    assert.equal(empty.body.from, '2020-01-01T00:00:00.000Z');
    assert.equal(empty.body.to, '2020-01-03T00:00:00.000Z');

    // CSV: a header, then one line per period.
    const csv = await operator(gw).get('/admin/v1/usage/history?from=2020-01-01&to=2020-01-03', { accept: 'text/csv' });
    assert.equal(csv.status, 200);
    assert.match(csv.headers.get('content-type') ?? '', /^text\/csv/);
    const lines = csv.text.trim().split('\r\n');
    assert.deepEqual(lines, [
      CSV_HEADER,
      'day,2020-01-01T00:00:00.000Z,0,0,0,0,0,0,,,,,0,0',
      'day,2020-01-02T00:00:00.000Z,0,0,0,0,0,0,,,,,0,0',
    ]);

    // The same validation as a database's usage.
    expectProblem(await operator(gw).get('/admin/v1/usage/history?granularity=week'), 400, 13);
    expectProblem(await operator(gw).get('/admin/v1/usage/history?from=2026-01-01&to=2025-01-01'), 400, 13);
    expectProblem(await operator(gw).get('/admin/v1/usage/history?granularity=hour&from=2020-01-01&to=2020-03-01'), 400, 13);
  });

  it('/admin/v1/usage/history and /admin/v1/health are the operator’s only', async () => {
    const t: Tenant = await newTenant(gw);
    const admin = await operator(gw).post(`/admin/v1/databases/${t.name}/api-keys`, { role: 'admin' });
    assert.equal(admin.status, 201, admin.text);
    for (const p of ['/admin/v1/usage/history', '/admin/v1/health']) {
      expectProblem(await new Api(gw.url, { 'x-api-key': admin.body.api_key }).get(p), 403, 15);
      expectProblem(await new Api(gw.url, { 'x-api-key': t.writeKey }).get(p), 403, 15);
      assert.equal((await new Api(gw.url).get(p)).status, 401, p);
    }
  });

  it('/admin/v1/health reports the catalog, Redis and every storage profile', async () => {
    const r = await operator(gw).get('/admin/v1/health');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.catalog.status, 'up');
    assert.equal(typeof r.body.catalog.latency_ms, 'number');
    assert.equal(r.body.catalog.error, undefined);
    assert.equal(r.body.redis.status, 'ready');
    assert.deepEqual(r.body.storage_profiles, [{ name: 'default', status: 'up' }]);
    assert.ok(Math.abs(Date.parse(r.body.checked_at) - Date.now()) < 60_000);

    // A store that does not answer: still 200, the profile down, and no credential in the error.
    const storage = gw.app.get(TableStorage);
    const original = storage.probe.bind(storage);
    storage.probe = async () => ({ default: 'https://user:very-secret-pw@store.example/bucket?sig=signed-secret&x=1: AccessDenied' });
    try {
      // A good probe stands for a few seconds; then the failing one is seen.
      const down = await eventually(
        async () => {
          const r = await operator(gw).get('/admin/v1/health');
          assert.equal(r.status, 200, r.text);
          return r.body.storage_profiles[0].status === 'down' && r;
        },
        160,
        50,
      );
      assert.equal(down.body.storage_profiles[0].status, 'down');
      assert.match(down.body.storage_profiles[0].error, /AccessDenied/);
      assert.ok(!/very-secret-pw|signed-secret/.test(down.text), down.text);
      assert.equal(down.body.catalog.status, 'up');
      assert.equal((await new Api(gw.url).get('/readyz')).status, 503);
    } finally {
      storage.probe = original;
    }
    const up = await operator(gw).get('/admin/v1/health');
    assert.deepEqual(up.body.storage_profiles, [{ name: 'default', status: 'up' }]);
  });
});
