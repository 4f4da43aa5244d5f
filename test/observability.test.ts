import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { Api, forEachCatalog, newTenant, operator, startGateway, TestGateway } from './helpers/gateway';
import { TestIssuer } from './helpers/jwks';
import { LogCapture } from './helpers/logs';

function metricValue(text: string, name: string, labels: Record<string, string>): number {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (want.every((w) => line.includes(w))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return 0;
}

forEachCatalog('observability: metrics and structured logs', (kind) => {
  const logs = new LogCapture();
  const issuer = new TestIssuer();
  let gw: TestGateway;

  before(async () => {
    await issuer.start();
    // Database labels are opt-in (they expose tenant names); this suite checks them. The default is in http-edge.test.
    gw = await startGateway(
      kind,
      { ...issuer.env(), RATE_LIMIT_LIMIT: '5', RATE_LIMIT_WINDOW_MS: '60000', METRICS_DATABASE_LABELS: 'true' },
      { logStream: logs },
    );
  });
  after(async () => {
    await gw.close();
    await issuer.stop();
  });

  it('exposes Prometheus metrics that move with requests, labelled by route template, status and database', async () => {
    const t = await newTenant(gw);
    const scrape = async () => (await new Api(gw.url).get('/metrics')).text;
    const before = await scrape();
    const labels = { method: 'POST', route: '/v1/namespace/:id/create', status: '200', database: t.name };
    assert.equal((await t.api.post('/v1/namespace/metric_probe_ns/create', {})).status, 200);
    assert.equal((await t.api.post('/v1/namespace/metric_probe_ns2/create', {})).status, 200);
    assert.equal((await new Api(gw.url, { 'x-api-key': 'lgw_wrong', 'x-service-database': t.name }).get('/v1/table')).status, 401);
    assert.equal((await t.reader.post('/v1/namespace/x/create', {})).status, 403);
    for (let i = 0; i < 3; i++) await t.api.get('/v1/namespace/%24/list');
    const throttled = await t.api.get('/v1/namespace/%24/list');
    assert.equal(throttled.status, 503);

    const res = await new Api(gw.url).get('/metrics');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /text\/plain/);
    const after = res.text;
    assert.equal(metricValue(after, 'lgw_http_requests_total', labels) - metricValue(before, 'lgw_http_requests_total', labels), 2);
    assert.ok(metricValue(after, 'lgw_auth_failures_total', { status: '401' }) >= 1);
    assert.ok(metricValue(after, 'lgw_auth_failures_total', { status: '403' }) >= 1);
    assert.equal(metricValue(after, 'lgw_throttled_requests_total', { database: t.name }), 1);
    assert.ok(metricValue(after, 'lgw_http_request_duration_seconds_count', { route: '/v1/namespace/:id/create', status: '200' }) >= 2);
    assert.ok(!after.includes('metric_probe_ns'), 'no object names in labels');
    assert.ok(!after.includes('lgw_wrong'));
    assert.match(after, /^lgw_process_cpu_user_seconds_total /m, 'process metrics');
    if (kind === 'postgres') assert.match(after, /^lgw_catalog_pool_connections\{state="total"\} \d+/m);
  });

  it('writes one JSON line per request with route template, status, latency, database, principal and request id', async () => {
    const t = await newTenant(gw);
    const res = await t.api.post('/v1/namespace/logged_ns/create', {}, { 'x-request-id': 'trace-observability-1' });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-request-id'), 'trace-observability-1');
    const err = await t.reader.post('/v1/namespace/denied/create', {}, { 'x-request-id': 'trace-observability-2' });
    assert.equal(err.body.instance, 'trace-observability-2', 'error bodies carry the request id as instance');
    const lines = logs.records.filter((r) => r.msg === 'request');
    const ok = lines.find((r) => r.reqId === 'trace-observability-1');
    assert.ok(ok, 'request line found');
    assert.equal(ok.method, 'POST');
    assert.equal(ok.route, '/v1/namespace/:id/create');
    assert.equal(ok.status, 200);
    assert.equal(ok.database, t.name);
    assert.match(ok.principal, /^key:[0-9a-f-]{36}$/);
    assert.equal(typeof ok.latency_ms, 'number');
    assert.equal(ok.level, 'info');
    const denied = lines.find((r) => r.reqId === 'trace-observability-2');
    assert.ok(denied, 'the refused request is logged too');
    assert.equal(denied.status, 403);
    assert.equal(denied.level, 'warn');
  });

  it('never writes an API key, operator key or token to the logs', async () => {
    const op = operator(gw);
    const created = await op.post('/admin/v1/databases', { name: `secrets_${kind}` });
    assert.equal(created.status, 201);
    const issued = await op.post(`/admin/v1/databases/secrets_${kind}/api-keys`, { role: 'write' });
    const key: string = issued.body.api_key;
    const token = await issuer.token({ sub: 'log-check', scope: 'write', databases: [`secrets_${kind}`] });
    const db = { 'x-service-database': `secrets_${kind}` };
    await new Api(gw.url, { ...db, 'x-api-key': key }).post('/v1/namespace/a/create', {});
    await new Api(gw.url, { ...db, authorization: `Bearer ${token}` }).post('/v1/namespace/b/create', {});
    await new Api(gw.url, db).post('/v1/namespace/c/create', { identity: { api_key: key } });
    await new Api(gw.url, db).post('/v1/namespace/d/create', { identity: { auth_token: token } });
    await new Api(gw.url, { ...db, 'x-api-key': `${key}x` }).get('/v1/table');
    await new Api(gw.url, { ...db, authorization: `Bearer ${token}x` }).get('/v1/table');
    await new Api(gw.url, { 'x-api-key': 'test-operator-key-0123456789' }).get('/admin/v1/databases/nope');
    const text = logs.text;
    assert.ok(logs.lines.length > 0);
    for (const secret of [key, token, 'test-operator-key-0123456789', key.slice(4, 24), token.split('.')[2]]) {
      assert.ok(!text.includes(secret), `a secret (${secret.slice(0, 6)}…) appeared in the logs`);
    }
  });
});
