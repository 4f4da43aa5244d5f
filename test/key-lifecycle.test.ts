import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  ADMIN_KEY,
  Api,
  createPgDatabase,
  eventually,
  forEachCatalog,
  newTenant,
  operator,
  startGateway,
  Tenant,
  TestGateway,
} from './helpers/gateway';
import { startGatewayProcess } from './helpers/gateway-process';
import { DatabasesService } from '../src/modules/databases/databases.service';
import { ApiKeysRepository } from '../src/modules/identity/auth/api-keys.repository';
import { ApiKeysService } from '../src/modules/identity/auth/api-keys.service';
import { expectProblem } from './helpers/assertions';

/** API keys: expiry, revocation on every replica, database-scoped admin keys (issue 3). */

/**
 * Waits until `api`'s key is refused: the other replica keeps its lookup for AUTH_CACHE_TTL_MS (5 minutes) unless told
 * through cache_invalidations, which it reads every AUTH_CACHE_SYNC_MS (1 s). Polled for up to 2 s (every 50 ms) so
 * a loaded machine does not fail it.
 */
const revokedOn = (api: Api) => eventually(async () => (await api.get(LIST)).status === 401, 40, 50);
const keyApi = (gw: { url: string }, db: string, key: string) => new Api(gw.url, { 'x-api-key': key, 'x-service-database': db });
const LIST = '/v1/namespace/%24/list';

forEachCatalog('API key expiry', (kind) => {
  let gw: TestGateway;
  let op: Api;
  let t: Tenant;
  before(async () => {
    gw = await startGateway(kind);
    op = operator(gw);
    t = await newTenant(gw);
  });
  after(() => gw.close());

  it('a key with expires_at works until then and answers 401 afterwards', async () => {
    // Far enough ahead that issuing the key and the first request fit before it on a loaded machine.
    const expiresAt = new Date(Date.now() + 5000);
    const issued = await op.post(`/admin/v1/databases/${t.name}/api-keys`, { role: 'write', expires_at: expiresAt.toISOString() });
    assert.equal(issued.status, 201, issued.text);
    assert.equal(issued.body.expires_at, expiresAt.toISOString());
    const api = keyApi(gw, t.name, issued.body.api_key);
    assert.equal((await api.get(LIST)).status, 200, 'works before it expires');

    const listed = (await op.get(`/admin/v1/databases/${t.name}/api-keys`)).body.api_keys.find((k: any) => k.id === issued.body.id);
    assert.equal(listed.expires_at, expiresAt.toISOString());
    assert.equal(listed.revoked_at, null);

    const rejected = await eventually(
      async () => {
        const r = await api.get(LIST);
        return r.status === 401 ? r : undefined;
      },
      100,
      100,
    );
    assert.ok(Date.now() >= expiresAt.getTime(), 'not rejected before its expiry');
    expectProblem(rejected, 401, 16, { msg: /expired|revoked|invalid/ });
    // It stays rejected (also from the cache), on writes too, and the other keys are unaffected.
    expectProblem(await api.post('/v1/namespace/late/create', {}), 401, 16);
    expectProblem(await api.get(LIST), 401, 16);
    assert.equal((await t.api.get(LIST)).status, 200);
    // An expired key is also no credential for the body identity.
    const viaBody = await new Api(gw.url, { 'x-service-database': t.name }).post('/v1/namespace/late/create', {
      identity: { api_key: issued.body.api_key },
    });
    expectProblem(viaBody, 401, 16);
  });

  it('a key without expires_at has expires_at null', async () => {
    const issued = await op.post(`/admin/v1/databases/${t.name}/api-keys`, { role: 'read' });
    assert.equal(issued.status, 201);
    assert.equal(issued.body.expires_at, null);
  });

  it('expires_at in the past or malformed is 400 code 13 and issues nothing', async () => {
    const before = (await op.get(`/admin/v1/databases/${t.name}/api-keys`)).body.api_keys.length;
    for (const expires_at of [
      new Date(Date.now() - 60_000).toISOString(),
      '2001-01-01T00:00:00Z',
      'tomorrow',
      '2027-13-01T00:00:00Z',
      '2027-01-01 00:00',
      '',
      12345,
    ]) {
      const r = await op.post(`/admin/v1/databases/${t.name}/api-keys`, { role: 'read', expires_at });
      expectProblem(r, 400, 13);
      assert.ok(!('api_key' in r.body), JSON.stringify(expires_at));
    }
    assert.equal((await op.get(`/admin/v1/databases/${t.name}/api-keys`)).body.api_keys.length, before);
    // An offset other than Z is fine.
    const withOffset = await op.post(`/admin/v1/databases/${t.name}/api-keys`, { role: 'read', expires_at: '2999-01-01T02:00:00+02:00' });
    assert.equal(withOffset.status, 201, withOffset.text);
    assert.equal(withOffset.body.expires_at, '2999-01-01T00:00:00.000Z');
  });
});

describe('revocation across two gateway processes sharing one Postgres', () => {
  let db: Awaited<ReturnType<typeof createPgDatabase>>;
  let a: TestGateway;
  let b: { url: string; close(): Promise<void> };
  before(async () => {
    db = await createPgDatabase();
    a = await startGateway('postgres', { DATABASE_URL: db.url });
    // The other replica is its own OS process.
    b = await startGatewayProcess({ DATABASE_URL: db.url, ADMIN_API_KEY: ADMIN_KEY, DATA_DIR: a.dataDir });
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await db?.drop();
  });

  it('a key revoked through one replica stops working on the other within 1 second', async () => {
    assert.equal(a.config.authCacheTtlMs, 300_000, 'the default lookup cache is on, for 5 minutes');
    assert.equal(a.config.authCacheSyncMs, 1000);
    const t = await newTenant(a);
    const keys = (await operator(a).get(`/admin/v1/databases/${t.name}/api-keys`)).body.api_keys;
    const writeId = keys.find((k: any) => k.role === 'write').id;
    const onA = keyApi(a, t.name, t.writeKey);
    const onB = keyApi(b, t.name, t.writeKey);
    // Both replicas know the key (and have cached the lookup).
    for (const api of [onA, onB, onA, onB]) assert.equal((await api.get(LIST)).status, 200);
    assert.equal((await onB.post('/v1/namespace/from_b/create', {})).status, 200);
    assert.deepEqual((await onA.get(LIST)).body.namespaces, ['from_b'], 'one catalog behind both');

    assert.equal((await operator(a).delete(`/admin/v1/databases/${t.name}/api-keys/${writeId}`)).status, 204);
    expectProblem(await onA.get(LIST), 401, 16); // at once on the replica that revoked it
    await revokedOn(onB); // within 1 s on the other
    expectProblem(await onB.get(LIST), 401, 16);
    expectProblem(await onB.post('/v1/namespace/after_revoke/create', {}), 401, 16);
    expectProblem(await onA.get(LIST), 401, 16);

    // Still listed, with revoked_at, on both replicas; revoking again is 404 on both.
    for (const gw of [a, b]) {
      const listed = (await operator(gw).get(`/admin/v1/databases/${t.name}/api-keys`)).body.api_keys;
      const k = listed.find((x: any) => x.id === writeId);
      assert.ok(k, 'a revoked key stays listed');
      assert.ok(k.revoked_at && !Number.isNaN(Date.parse(k.revoked_at)), JSON.stringify(k));
      assert.equal(listed.find((x: any) => x.role === 'read').revoked_at, null);
      expectProblem(await operator(gw).delete(`/admin/v1/databases/${t.name}/api-keys/${writeId}`), 404, 0);
    }
    // The read key was never touched.
    assert.equal((await keyApi(b, t.name, t.readKey).get(LIST)).status, 200);
  });

  it('a quota or network rule changed through A applies on B within AUTH_CACHE_SYNC_MS; a deleted database stops there too', async () => {
    const t = await newTenant(a);
    const onB = keyApi(b, t.name, t.writeKey);
    assert.equal((await onB.post('/v1/namespace/q1/create', {})).status, 200); // B has cached the key and its database
    assert.equal((await operator(a).request('PATCH', `/admin/v1/databases/${t.name}`, { quotas: { max_namespaces: 1 } })).status, 200);
    // A new name each time: a create that got in before B heard of the quota must not answer 409 to the next.
    let n = 0;
    await eventually(async () => (await onB.post(`/v1/namespace/more${n++}/create`, {})).status === 403, 40, 50);
    expectProblem(await onB.post('/v1/namespace/one_more/create', {}), 403, 15, { msg: /max_namespaces = 1/ });
    assert.equal(
      (await operator(a).request('PATCH', `/admin/v1/databases/${t.name}`, { network_rules: { allowed_cidrs: ['203.0.113.0/24'] } }))
        .status,
      200,
    );
    await eventually(async () => (await onB.get(LIST)).status === 403, 40, 50);
    assert.equal(
      (await operator(a).request('PATCH', `/admin/v1/databases/${t.name}`, { network_rules: { allowed_cidrs: [] } })).status,
      200,
    );
    await eventually(async () => (await onB.get(LIST)).status === 200, 40, 50);
    assert.equal((await operator(a).delete(`/admin/v1/databases/${t.name}`)).status, 204);
    await revokedOn(onB);
  });

  it('the other direction too: revoked through B, rejected by A within 1 second', async () => {
    const t = await newTenant(b);
    const readId = (await operator(b).get(`/admin/v1/databases/${t.name}/api-keys`)).body.api_keys.find((k: any) => k.role === 'read').id;
    const onA = keyApi(a, t.name, t.readKey);
    assert.equal((await onA.get(LIST)).status, 200);
    assert.equal((await onA.get(LIST)).status, 200);
    assert.equal((await operator(b).delete(`/admin/v1/databases/${t.name}/api-keys/${readId}`)).status, 204);
    await revokedOn(onA);
    expectProblem(await onA.get(LIST), 401, 16);
  });
});

forEachCatalog('database-scoped admin keys', (kind) => {
  let gw: TestGateway;
  let op: Api;
  let t: Tenant;
  let other: Tenant;
  let admin: Api;
  let adminKeyId: string;
  before(async () => {
    gw = await startGateway(kind);
    op = operator(gw);
    t = await newTenant(gw);
    other = await newTenant(gw);
    const issued = await op.post(`/admin/v1/databases/${t.name}/api-keys`, { role: 'admin', description: 'db admin' });
    assert.equal(issued.status, 201, issued.text);
    assert.equal(issued.body.role, 'admin');
    adminKeyId = issued.body.id;
    admin = new Api(gw.url, { 'x-api-key': issued.body.api_key });
  });
  after(() => gw.close());

  it("issues, lists and revokes its own database's keys", async () => {
    const issued = await admin.post(`/admin/v1/databases/${t.name}/api-keys`, { role: 'read', description: 'by admin' });
    assert.equal(issued.status, 201, issued.text);
    assert.match(issued.body.api_key, /^lgw_/);
    const newKey = keyApi(gw, t.name, issued.body.api_key);
    assert.equal((await newKey.get(LIST)).status, 200);
    expectProblem(await newKey.post('/v1/namespace/nope/create', {}), 403, 15);

    const listing = await admin.get(`/admin/v1/databases/${t.name}/api-keys`);
    assert.equal(listing.status, 200, listing.text);
    const ids = listing.body.api_keys.map((k: any) => k.id);
    assert.ok(ids.includes(issued.body.id) && ids.includes(adminKeyId));
    assert.ok(!listing.text.includes(issued.body.api_key) && !listing.text.includes('lgw_'), 'no secrets in the listing');

    assert.equal((await admin.delete(`/admin/v1/databases/${t.name}/api-keys/${issued.body.id}`)).status, 204);
    expectProblem(await newKey.get(LIST), 401, 16);
    expectProblem(await admin.delete(`/admin/v1/databases/${t.name}/api-keys/${issued.body.id}`), 404, 0);

    // An admin may issue admin keys of its database as well.
    const admin2 = await admin.post(`/admin/v1/databases/${t.name}/api-keys`, { role: 'admin' });
    assert.equal(admin2.status, 201, admin2.text);
    const admin2Api = new Api(gw.url, { 'x-api-key': admin2.body.api_key });
    assert.equal((await admin2Api.get(`/admin/v1/databases/${t.name}/api-keys`)).status, 200);
    // A revoked admin key loses the operator API at once.
    assert.equal((await admin.delete(`/admin/v1/databases/${t.name}/api-keys/${admin2.body.id}`)).status, 204);
    expectProblem(await admin2Api.get(`/admin/v1/databases/${t.name}/api-keys`), 401, 16);
  });

  it('reads its own audit trail, where it is the actor of what it did', async () => {
    const issued = await admin.post(`/admin/v1/databases/${t.name}/api-keys`, { role: 'write' });
    assert.equal(issued.status, 201);
    const audit = await admin.get(`/admin/v1/databases/${t.name}/audit`);
    assert.equal(audit.status, 200, audit.text);
    const ev = audit.body.events.find((e: any) => e.action === 'api_key.issue' && e.details?.key_id === issued.body.id);
    assert.ok(ev, 'the issue is recorded');
    assert.equal(ev.actor, `key:${adminKeyId}`);
  });

  it("gets 403 for another database's keys and audit", async () => {
    expectProblem(await admin.get(`/admin/v1/databases/${other.name}/api-keys`), 403, 15);
    expectProblem(await admin.post(`/admin/v1/databases/${other.name}/api-keys`, { role: 'admin' }), 403, 15);
    const otherKeyId = (await op.get(`/admin/v1/databases/${other.name}/api-keys`)).body.api_keys[0].id;
    expectProblem(await admin.delete(`/admin/v1/databases/${other.name}/api-keys/${otherKeyId}`), 403, 15);
    expectProblem(await admin.get(`/admin/v1/databases/${other.name}/audit`), 403, 15);
    expectProblem(await admin.get('/admin/v1/databases/no_such_db/api-keys'), 403, 15);
    // Naming its own database in the path does not reach another database's key either.
    expectProblem(await admin.delete(`/admin/v1/databases/${t.name}/api-keys/${otherKeyId}`), 404, 0);
    // Nothing happened to the other database's keys.
    const otherKeys = (await op.get(`/admin/v1/databases/${other.name}/api-keys`)).body.api_keys;
    assert.equal(otherKeys.length, 2);
    assert.ok(otherKeys.every((k: any) => k.revoked_at === null));
    assert.equal((await other.api.get(LIST)).status, 200);
  });

  it('only the operator manages databases: 403 for the admin key, 401 for an invalid key', async () => {
    expectProblem(await admin.post('/admin/v1/databases', { name: 'by_admin' }), 403, 15, { msg: /operator/ });
    expectProblem(await admin.get('/admin/v1/databases'), 403, 15);
    expectProblem(await admin.get(`/admin/v1/databases/${t.name}`), 403, 15);
    expectProblem(await admin.delete(`/admin/v1/databases/${t.name}`), 403, 15);
    expectProblem(await op.get('/admin/v1/databases/by_admin'), 404, 0);
    assert.equal((await op.get(`/admin/v1/databases/${t.name}`)).status, 200, 'not deleted');

    const invalid = new Api(gw.url, { 'x-api-key': 'lgw_not-a-real-key-at-all' });
    expectProblem(await invalid.post('/admin/v1/databases', { name: 'by_invalid' }), 401, 16);
    expectProblem(await invalid.get('/admin/v1/databases'), 401, 16);
    expectProblem(await invalid.get(`/admin/v1/databases/${t.name}/api-keys`), 401, 16);
    expectProblem(await new Api(gw.url).get(`/admin/v1/databases/${t.name}/api-keys`), 401, 16);
  });

  it('write and read keys cannot manage keys (403)', async () => {
    expectProblem(await new Api(gw.url, { 'x-api-key': t.writeKey }).get(`/admin/v1/databases/${t.name}/api-keys`), 403, 15);
    expectProblem(
      await new Api(gw.url, { 'x-api-key': t.writeKey }).post(`/admin/v1/databases/${t.name}/api-keys`, { role: 'admin' }),
      403,
      15,
    );
    expectProblem(await new Api(gw.url, { 'x-api-key': t.readKey }).get(`/admin/v1/databases/${t.name}/audit`), 403, 15);
  });

  it('an admin key reads and writes on the REST contract of its database only', async () => {
    const rest = admin.with({ 'x-service-database': t.name });
    assert.equal((await rest.post('/v1/namespace/by_admin_key/create', {})).status, 200);
    assert.equal((await rest.post('/v1/table/by_admin_key%24t/declare', {})).status, 200);
    assert.ok((await rest.get(LIST)).body.namespaces.includes('by_admin_key'));
    assert.ok((await t.reader.get(LIST)).body.namespaces.includes('by_admin_key'));
    expectProblem(await admin.with({ 'x-service-database': other.name }).get(LIST), 403, 15);
  });
});

forEachCatalog('admin keys without an operator key', (kind) => {
  let gw: TestGateway;
  let name: string;
  let admin: Api;
  before(async () => {
    gw = await startGateway(kind, { ADMIN_API_KEY: '' });
    // No operator API: make the database and its admin key in-process, as the CLI would.
    const svc = gw.app.get(DatabasesService);
    name = 'no_operator_db';
    await svc.create(name);
    const key = await svc.issueKey(name, 'admin');
    admin = new Api(gw.url, { 'x-api-key': key.api_key });
  });
  after(() => gw.close());

  it("an admin key still manages its own database's keys", async () => {
    const issued = await admin.post(`/admin/v1/databases/${name}/api-keys`, { role: 'write' });
    assert.equal(issued.status, 201, issued.text);
    const writer = keyApi(gw, name, issued.body.api_key);
    assert.equal((await writer.post('/v1/namespace/ok/create', {})).status, 200);
    const listing = await admin.get(`/admin/v1/databases/${name}/api-keys`);
    assert.equal(listing.status, 200);
    assert.equal(listing.body.api_keys.length, 2);
    assert.equal((await admin.get(`/admin/v1/databases/${name}/audit`)).status, 200);
    assert.equal((await admin.delete(`/admin/v1/databases/${name}/api-keys/${issued.body.id}`)).status, 204);
    expectProblem(await writer.get(LIST), 401, 16);
  });

  it('the operator API for databases stays disabled; the old operator key is no credential', async () => {
    expectProblem(await admin.get('/admin/v1/databases'), 403, 15, { msg: /ADMIN_API_KEY/ });
    expectProblem(await admin.post('/admin/v1/databases', { name: 'x' }), 403, 15);
    const formerOperator = new Api(gw.url, { 'x-api-key': ADMIN_KEY });
    expectProblem(await formerOperator.get(`/admin/v1/databases/${name}/api-keys`), 401, 16);
    expectProblem(await formerOperator.get('/admin/v1/databases'), 403, 15);
  });
});

forEachCatalog('API key lookups', (kind) => {
  let gw: TestGateway;
  let t: Tenant;
  before(async () => {
    gw = await startGateway(kind);
    t = await newTenant(gw);
  });
  after(() => gw.close());

  /** Counts the catalog lookups the service makes while `fn` runs. */
  async function counting<T>(fn: (keys: ApiKeysService) => Promise<T>): Promise<{ result: T; lookups: number }> {
    const keys = gw.app.get(ApiKeysService);
    const repo = gw.app.get(ApiKeysRepository);
    const original = repo.findByHash;
    let lookups = 0;
    repo.findByHash = function (this: ApiKeysRepository, ...args: Parameters<ApiKeysRepository['findByHash']>) {
      lookups++;
      return original.apply(this, args);
    };
    try {
      return { result: await fn(keys), lookups };
    } finally {
      repo.findByHash = original;
    }
  }

  it('requests arriving together with an uncached key share one catalog lookup', async () => {
    const { result, lookups } = await counting(async (keys) => {
      keys.forget();
      return Promise.all(Array.from({ length: 20 }, () => keys.authenticate(t.writeKey)));
    });
    assert.equal(lookups, 1);
    assert.ok(
      result.every((k) => k?.row.role === 'write'),
      JSON.stringify(result),
    );
    // Cached now: no lookup at all.
    assert.equal((await counting((keys) => keys.authenticate(t.writeKey))).lookups, 0);
    // An unknown key is shared and refused the same way.
    const unknown = await counting((keys) => Promise.all([keys.authenticate('lgw_nope'), keys.authenticate('lgw_nope')]));
    assert.deepEqual(unknown, { result: [null, null], lookups: 1 });
  });

  it('a lookup under way when the cache is dropped (a revocation) is answered but not cached', async () => {
    const { lookups } = await counting(async (keys) => {
      keys.forget();
      const first = keys.authenticate(t.readKey);
      keys.forget(); // as a revocation on this replica does while the lookup runs
      assert.equal((await first)?.row.role, 'read');
      // Looked up again (the earlier result was not cached); the request after this one is served from the cache.
      await keys.authenticate(t.readKey);
      await keys.authenticate(t.readKey);
    });
    assert.equal(lookups, 2);
  });
});
