import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Api, eventually, forEachCatalog, newTenant, operator, Reply, startGateway, Tenant, TestGateway } from './helpers/gateway';

import { PrismaClient } from '../src/generated/prisma/client';
import { ApiKeysRepository } from '../src/modules/identity/auth/api-keys.repository';
import { expectProblem } from './helpers/assertions';
import { Prng } from './helpers/prng';
import { startThrottledReplicas, ThrottledReplicas } from './helpers/replicas';

/** API key lifecycle (issue 34): names and owners, edits, rotation with an overlap, last_used_at, per-key rate limits. */

const LIST = '/v1/namespace/%24/list';
const keyApi = (gw: { url: string }, db: string, key: string) => new Api(gw.url, { 'x-api-key': key, 'x-service-database': db });
const keysOf = async (op: Api, db: string) => (await op.get(`/admin/v1/databases/${db}/api-keys`)).body.api_keys as any[];

function expectSlowDown(r: Reply, msg: RegExp): void {
  assert.equal(r.status, 503, r.text);
  assert.equal(r.body.title, 'Slow down');
  assert.equal(r.body.code, 21);
  assert.match(r.body.error ?? r.body.detail ?? r.text, msg);
  assert.ok(Number(r.headers.get('retry-after')) >= 1);
}

async function statuses(n: number, send: () => Promise<Reply>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await send()).status);
  return out;
}

forEachCatalog('API key lifecycle', (kind) => {
  let gw: TestGateway;
  let op: Api;
  let t: Tenant;
  before(async () => {
    gw = await startGateway(kind, { KEY_USAGE_FLUSH_MS: '200', RATE_LIMIT_LIMIT: '1000', RATE_LIMIT_WINDOW_MS: '60000' });
    op = operator(gw);
    t = await newTenant(gw);
  });
  after(() => gw.close());

  const keysUrl = () => `/admin/v1/databases/${t.name}/api-keys`;

  it('a key carries a name, an owner and a rate limit; keys made without them list nulls', async () => {
    const made = await op.post(keysUrl(), {
      role: 'write',
      name: 'ingest',
      owner: 'alice@example.com',
      rate_limit: { limit: 50, window_ms: 1000 },
    });
    assert.equal(made.status, 201, made.text);
    assert.equal(made.body.name, 'ingest');
    assert.equal(made.body.owner, 'alice@example.com');
    assert.deepEqual(made.body.rate_limit, { limit: 50, window_ms: 1000 });
    assert.equal(made.body.rotated_from, null);
    const listed = await keysOf(op, t.name);
    const k = listed.find((x) => x.id === made.body.id);
    assert.equal(k.name, 'ingest');
    assert.equal(k.owner, 'alice@example.com');
    assert.equal(k.last_used_at, null);
    const plain = listed.find((x) => x.id !== made.body.id);
    assert.equal(plain.name, null);
    assert.equal(plain.owner, null);
    assert.equal(plain.rate_limit, null);
    assert.equal(plain.rotated_from, null);
    for (const bad of [
      { role: 'read', rate_limit: { limit: 0, window_ms: 1000 } },
      { role: 'read', name: '' },
      { role: 'read', owner: 7 },
    ]) {
      expectProblem(await op.post(keysUrl(), bad), 400, 13);
    }
  });

  it('PATCH edits name, owner, expiry and rate limit; unknown fields, empty bodies and bad values are 400', async () => {
    const made = await op.post(keysUrl(), { role: 'read', name: 'dash' });
    const url = `${keysUrl()}/${made.body.id}`;
    const edited = await op.request('PATCH', url, { owner: 'bob', rate_limit: { limit: 3, window_ms: 60000 } });
    assert.equal(edited.status, 200, edited.text);
    assert.equal(edited.body.name, 'dash');
    assert.equal(edited.body.owner, 'bob');
    assert.deepEqual(edited.body.rate_limit, { limit: 3, window_ms: 60000 });
    assert.ok(!edited.text.includes('lgw_'), 'never the secret');
    const cleared = await op.request('PATCH', url, { name: null, rate_limit: null });
    assert.equal(cleared.body.name, null);
    assert.equal(cleared.body.rate_limit, null);
    assert.equal(cleared.body.owner, 'bob');
    expectProblem(await op.request('PATCH', url, { role: 'admin' }), 400, 13);
    expectProblem(await op.request('PATCH', url, {}), 400, 13, { msg: /nothing to change/ });
    expectProblem(await op.request('PATCH', url, { expires_at: '2001-01-01T00:00:00Z' }), 400, 13, { msg: /future/ });
    expectProblem(await op.request('PATCH', url, { rate_limit: { limit: 1 } }), 400, 13);
    expectProblem(await op.request('PATCH', `${keysUrl()}/00000000-0000-4000-8000-000000000000`, { name: 'x' }), 404, 0);
    expectProblem(await op.request('PATCH', `${keysUrl()}/not-a-uuid`, { name: 'x' }), 404, 0);
    // A key of another database is not found through this one.
    const other = await newTenant(gw);
    const foreign = (await keysOf(op, other.name))[0];
    expectProblem(await op.request('PATCH', `${keysUrl()}/${foreign.id}`, { name: 'x' }), 404, 0);
  });

  it('an expiry set by PATCH is enforced; null lifts it again', async () => {
    const made = await op.post(keysUrl(), { role: 'read' });
    const api = keyApi(gw, t.name, made.body.api_key);
    assert.equal((await api.get(LIST)).status, 200);
    const soon = new Date(Date.now() + 1500).toISOString();
    assert.equal((await op.request('PATCH', `${keysUrl()}/${made.body.id}`, { expires_at: soon })).body.expires_at, soon);
    await eventually(async () => (await api.get(LIST)).status === 401, 100, 50);
    assert.ok(Date.now() >= Date.parse(soon), 'not refused before its expiry');
    const lifted = await op.request('PATCH', `${keysUrl()}/${made.body.id}`, { expires_at: null });
    assert.equal(lifted.body.expires_at, null);
    assert.equal((await api.get(LIST)).status, 200, 'works again at once on this replica');
  });

  it('rotate issues a new key like the old one; both work until the old one is revoked', async () => {
    const expires = new Date(Date.now() + 86_400_000).toISOString();
    const old = await op.post(keysUrl(), {
      role: 'write',
      name: 'svc',
      owner: 'ops',
      expires_at: expires,
      rate_limit: { limit: 100, window_ms: 1000 },
    });
    const rotated = await op.post(`${keysUrl()}/${old.body.id}/rotate`, {});
    assert.equal(rotated.status, 201, rotated.text);
    assert.notEqual(rotated.body.id, old.body.id);
    assert.notEqual(rotated.body.api_key, old.body.api_key);
    assert.match(rotated.body.api_key, /^lgw_/);
    assert.equal(rotated.body.rotated_from, old.body.id);
    for (const f of ['role', 'name', 'owner', 'expires_at', 'rate_limit', 'description']) {
      assert.deepEqual(rotated.body[f], old.body[f], f);
    }
    const oldApi = keyApi(gw, t.name, old.body.api_key);
    const newApi = keyApi(gw, t.name, rotated.body.api_key);
    assert.equal((await oldApi.get(LIST)).status, 200);
    assert.equal((await newApi.post('/v1/namespace/rotated/create', {})).status, 200, 'same role (write)');
    const listed = await keysOf(op, t.name);
    assert.equal(listed.find((k) => k.id === rotated.body.id).rotated_from, old.body.id);
    assert.equal(listed.find((k) => k.id === old.body.id).revoked_at, null, 'the old key stays valid');
    assert.equal((await op.delete(`${keysUrl()}/${old.body.id}`)).status, 204);
    assert.equal((await oldApi.get(LIST)).status, 401);
    assert.equal((await newApi.get(LIST)).status, 200);
    // A revoked key cannot be rotated.
    expectProblem(await op.post(`${keysUrl()}/${old.body.id}/rotate`, {}), 409, 14, { msg: /revoked/ });
    expectProblem(await op.post(`${keysUrl()}/00000000-0000-4000-8000-000000000000/rotate`, {}), 404, 0);
    expectProblem(await op.post(`${keysUrl()}/${rotated.body.id}/rotate`, { overlap_seconds: -1 }), 400, 13);
    expectProblem(await op.post(`${keysUrl()}/${rotated.body.id}/rotate`, { overlap: 5 }), 400, 13);
  });

  it('rotate with overlap_seconds ends the old key then (never later than its own expiry); an expired key is a 409', async () => {
    const old = await op.post(keysUrl(), { role: 'read' });
    const before = Date.now();
    const rotated = await op.post(`${keysUrl()}/${old.body.id}/rotate`, { overlap_seconds: 1 });
    assert.equal(rotated.status, 201, rotated.text);
    assert.equal(rotated.body.expires_at, null, 'the new key keeps the old one’s (absent) expiry');
    const oldRow = (await keysOf(op, t.name)).find((k) => k.id === old.body.id);
    const ends = Date.parse(oldRow.expires_at);
    assert.ok(ends >= before + 1000 && ends <= Date.now() + 1000, oldRow.expires_at);
    const oldApi = keyApi(gw, t.name, old.body.api_key);
    await eventually(async () => (await oldApi.get(LIST)).status === 401, 100, 50);
    assert.equal((await keyApi(gw, t.name, rotated.body.api_key).get(LIST)).status, 200);
    expectProblem(await op.post(`${keysUrl()}/${old.body.id}/rotate`, {}), 409, 14, { msg: /expired/ });
    // An overlap longer than the key's own life does not extend it.
    const short = new Date(Date.now() + 60_000).toISOString();
    const k = await op.post(keysUrl(), { role: 'read', expires_at: short });
    await op.post(`${keysUrl()}/${k.body.id}/rotate`, { overlap_seconds: 3600 });
    assert.equal((await keysOf(op, t.name)).find((x) => x.id === k.body.id).expires_at, short);
  });

  it('the audit trail records issue, rotate, update and revoke with the key ids and changes, never a secret', async () => {
    const made = await op.post(keysUrl(), { role: 'read', name: 'audited' });
    await op.request('PATCH', `${keysUrl()}/${made.body.id}`, { owner: 'carol' });
    const rotated = await op.post(`${keysUrl()}/${made.body.id}/rotate`, {});
    await op.delete(`${keysUrl()}/${made.body.id}`);
    const trail = await op.get(`/admin/v1/databases/${t.name}/audit?limit=20`);
    assert.equal(trail.status, 200, trail.text);
    assert.ok(!trail.text.includes('lgw_'), 'no secret in the trail');
    const ev = (action: string) => trail.body.events.find((e: any) => e.action === action && JSON.stringify(e).includes(made.body.id));
    assert.equal(ev('api_key.issue').details.name, 'audited');
    assert.deepEqual(ev('api_key.update').details.changed, { owner: { from: null, to: 'carol' } });
    assert.equal(ev('api_key.update').actor, 'operator');
    assert.equal(ev('api_key.rotate').details.key_id, rotated.body.id);
    assert.equal(ev('api_key.rotate').details.rotated_from, made.body.id);
    assert.equal(ev('api_key.revoke').target, made.body.id);
  });

  it('last_used_at is recorded in the background, only moving forward', async () => {
    const used = await op.post(keysUrl(), { role: 'read' });
    const idle = await op.post(keysUrl(), { role: 'read' });
    const before = Date.now();
    assert.equal((await keyApi(gw, t.name, used.body.api_key).get(LIST)).status, 200);
    const row = await eventually(async () => (await keysOf(op, t.name)).find((k) => k.id === used.body.id && k.last_used_at));
    const at = Date.parse(row.last_used_at);
    assert.ok(at >= before - 5 && at <= Date.now(), row.last_used_at);
    assert.equal((await keysOf(op, t.name)).find((k) => k.id === idle.body.id).last_used_at, null);
    // A later use moves it on.
    assert.equal((await keyApi(gw, t.name, used.body.api_key).get(LIST)).status, 200);
    await eventually(async () => Date.parse((await keysOf(op, t.name)).find((k) => k.id === used.body.id).last_used_at) > at);
  });

  it("three replicas' concurrent last-used flushes of the same keys in different orders never deadlock", async () => {
    // Each replica notes uses of the same 2,000 keys in an order of its own. Locked in the order the join met them, two
    // statements could each hold a row the other needs next (40P01); locked in id order first, never.
    const keys = gw.app.get(ApiKeysRepository);
    const prisma = gw.app.get(PrismaClient);
    const db = (await op.get(`/admin/v1/databases/${t.name}`)).body;
    const ids = Array.from({ length: 2000 }, () => randomUUID());
    await prisma.$executeRawUnsafe(
      `INSERT INTO api_keys (id, database_id, hash, role)
       SELECT id, $1::uuid, 'race-' || id, 'read' FROM unnest($2::uuid[]) id`,
      db.id,
      ids,
    );
    const base = Date.UTC(2030, 0, 1);
    try {
      const flushes = await Promise.allSettled(
        [1, 2, 3].map(async (replica) => {
          for (let round = 1; round <= 3; round++) {
            const order = new Prng('key-usage-race', replica * 10 + round).shuffled(ids);
            await keys.touch(order.map((id) => ({ id, at: new Date(base + replica * 1000 + round) })));
          }
        }),
      );
      const failed = flushes.filter((f): f is PromiseRejectedResult => f.status === 'rejected');
      assert.deepEqual(
        failed.map((f) => String(f.reason?.message ?? f.reason).slice(0, 300)),
        [],
        'no flush failed',
      );
      // Every key ends at the latest use any replica noted (replica 3's last round), whatever order they committed in.
      const rows = await prisma.$queryRawUnsafe<{ at: Date; n: number }[]>(
        `SELECT last_used_at AS at, count(*)::int AS n FROM api_keys WHERE id = ANY($1::uuid[]) GROUP BY 1`,
        ids,
      );
      assert.deepEqual(
        rows.map((r) => [new Date(r.at).getTime(), r.n]),
        [[base + 3003, ids.length]],
      );
    } finally {
      await prisma.$executeRawUnsafe(`DELETE FROM api_keys WHERE id = ANY($1::uuid[])`, ids);
    }
  });

  it("a key's own rate limit applies inside the database's: either exhausted is 503 Slow down", async () => {
    const tt = await newTenant(gw);
    const capped = await op.post(`/admin/v1/databases/${tt.name}/api-keys`, { role: 'read', rate_limit: { limit: 2, window_ms: 60000 } });
    const cappedApi = keyApi(gw, tt.name, capped.body.api_key);
    // The rate-limit headers describe the nearer limit: the key's 2, not the database's default.
    const first = await cappedApi.get(LIST);
    assert.equal(first.status, 200);
    assert.equal(first.headers.get('x-ratelimit-limit-database'), '2');
    assert.equal(first.headers.get('x-ratelimit-remaining-database'), '1');
    assert.deepEqual(await statuses(1, () => cappedApi.get(LIST)), [200]);
    expectSlowDown(await cappedApi.get(LIST), /API key/);
    assert.equal((await tt.reader.get(LIST)).status, 200, "the database's other keys are unaffected");
    // The database's budget still binds a key whose own limit is larger; the key's requests count against it.
    const db = await newTenant(gw);
    assert.equal((await op.request('PATCH', `/admin/v1/databases/${db.name}`, { rate_limit: { limit: 3, window_ms: 60000 } })).status, 200);
    const roomy = await op.post(`/admin/v1/databases/${db.name}/api-keys`, { role: 'read', rate_limit: { limit: 100, window_ms: 60000 } });
    const roomyApi = keyApi(gw, db.name, roomy.body.api_key);
    const roomyFirst = await roomyApi.get(LIST);
    assert.equal(roomyFirst.headers.get('x-ratelimit-limit-database'), '3', "here the database's limit is the nearer one");
    assert.deepEqual(await statuses(2, () => roomyApi.get(LIST)), [200, 200]);
    expectSlowDown(await roomyApi.get(LIST), /database/);
    expectSlowDown(await db.reader.get(LIST), /database/);
  });

  it('the OpenAPI document describes the new routes and fields', async () => {
    const doc = (await new Api(gw.url).get('/openapi.json')).body;
    const ops = Object.values(doc.paths as Record<string, Record<string, any>>).flatMap((p) => Object.values(p).map((o) => o.operationId));
    assert.ok(ops.includes('RotateApiKey') && ops.includes('UpdateApiKey'), ops.join());
    const key = doc.components.schemas.ApiKey;
    for (const f of ['name', 'owner', 'rate_limit', 'rotated_from', 'last_used_at']) assert.ok(key.properties[f], f);
  });
});

describe('per-key rate limits across replicas (shared Redis and Postgres)', () => {
  let a: TestGateway;
  let b: ThrottledReplicas['b'];
  let replicas: ThrottledReplicas;
  before(async () => {
    replicas = await startThrottledReplicas();
    ({ a, b } = replicas);
  });
  after(() => replicas.close());

  it("counts a key's limit once across both gateways", async () => {
    const t = await newTenant(a);
    const k = await operator(a).post(`/admin/v1/databases/${t.name}/api-keys`, {
      role: 'read',
      rate_limit: { limit: 5, window_ms: 60000 },
    });
    const viaA = keyApi(a, t.name, k.body.api_key);
    const viaB = keyApi(b, t.name, k.body.api_key);
    // Both replicas have talked to Redis before counting starts (a request while a fresh replica's connection is not
    // up yet is served unthrottled: fail-open, docs/configuration.md).
    assert.equal((await new Api(b.url, t.reader.headers).get(LIST)).status, 200);
    assert.equal((await t.reader.get(LIST)).status, 200);
    const results: number[] = [];
    for (let i = 0; i < 4; i++) {
      results.push((await viaA.get(LIST)).status);
      results.push((await viaB.get(LIST)).status);
    }
    assert.equal(results.filter((s) => s === 200).length, 5, JSON.stringify(results));
    assert.equal(results.filter((s) => s === 503).length, 3);
    expectSlowDown(await viaB.get(LIST), /API key/);
    assert.equal((await new Api(b.url, t.reader.headers).get(LIST)).status, 200, 'the database has room for its other keys');
  });

  it('a gateway writes the uses it has noted when it shuts down', async () => {
    const t = await newTenant(a);
    const c = await startGateway('postgres', { DATABASE_URL: replicas.catalogUrl, KEY_USAGE_FLUSH_MS: '3600000' });
    const id = (await keysOf(operator(a), t.name)).find((k) => k.role === 'read').id;
    assert.equal((await new Api(c.url, t.reader.headers).get(LIST)).status, 200);
    assert.equal((await keysOf(operator(a), t.name)).find((k) => k.id === id).last_used_at, null, 'not written yet');
    await c.close();
    assert.notEqual((await keysOf(operator(a), t.name)).find((k) => k.id === id).last_used_at, null);
  });
});
