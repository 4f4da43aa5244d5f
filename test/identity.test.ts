import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as lancedb from '@lancedb/lancedb';
import { Api, forEachCatalog, newTenant, operator, startGateway, Tenant, TestGateway } from './helpers/gateway';
import { TestIssuer } from './helpers/jwks';
import { expectProblem } from './helpers/assertions';

/**
 * OAuth 2.0 bearer tokens (JWT) against a real JWKS served on loopback, and credentials in the request body
 * (docs/rest-contract.md §5.1-5.3).
 */
forEachCatalog('bearer tokens', (kind) => {
  const issuer = new TestIssuer();
  let gw: TestGateway;
  let t: Tenant;
  let other: Tenant;
  const bearer = (token: string) => new Api(gw.url, { authorization: `Bearer ${token}`, 'x-service-database': t.name });

  before(async () => {
    await issuer.start();
    gw = await startGateway(kind, issuer.env());
    t = await newTenant(gw);
    other = await newTenant(gw);
  });
  after(async () => {
    await gw.close();
    await issuer.stop();
  });

  it('accepts a valid token; its scope decides read or write', async () => {
    const writer = bearer(await issuer.token({ sub: 'alice', scope: 'openid write', databases: [t.name] }));
    assert.equal((await writer.post('/v1/namespace/by_token/create', {})).status, 200);
    const reader = bearer(await issuer.token({ sub: 'bob', scope: 'read', databases: [t.name] }));
    assert.deepEqual((await reader.get('/v1/namespace/%24/list')).body.namespaces, ['by_token']);
    expectProblem(await reader.post('/v1/namespace/nope/create', {}), 403, 15, { msg: /needs 'write'/ });
    const noScope = bearer(await issuer.token({ sub: 'carol', scope: 'openid profile', databases: [t.name] }));
    expectProblem(await noScope.get('/v1/namespace/%24/list'), 403, 15, { msg: /scope/ });
  });

  it('takes the databases from the claim: a string, a list, or * for all', async () => {
    const single = bearer(await issuer.token({ sub: 's', scope: 'read', databases: t.name }));
    assert.equal((await single.get('/v1/namespace/%24/list')).status, 200);
    const elsewhere = bearer(await issuer.token({ sub: 's', scope: 'read', databases: [other.name] }));
    expectProblem(await elsewhere.get('/v1/namespace/%24/list'), 403, 15, { msg: /not valid for database/ });
    const none = bearer(await issuer.token({ sub: 's', scope: 'read' }));
    expectProblem(await none.get('/v1/namespace/%24/list'), 403, 15);
    const all = await issuer.token({ sub: 's', scope: 'read', databases: ['*'] });
    assert.equal((await bearer(all).get('/v1/namespace/%24/list')).status, 200);
    assert.equal((await bearer(all).get('/v1/namespace/%24/list', { 'x-service-database': other.name })).status, 200);
    expectProblem(await bearer(all).get('/v1/namespace/%24/list', { 'x-service-database': 'no_such_db' }), 404, 1);
  });

  it('rejects expired, wrong-issuer, wrong-audience, exp-less, forged and malformed tokens with 401', async () => {
    const claims = { sub: 'mallory', scope: 'write', databases: ['*'] };
    const cases: [string, string, RegExp][] = [
      ['expired', await issuer.token(claims, { expiresIn: Math.floor(Date.now() / 1000) - 3600 }), /expired/],
      ['wrong issuer', await issuer.token(claims, { issuer: 'https://evil.example' }), /'iss'/],
      ['wrong audience', await issuer.token(claims, { audience: 'someone-else' }), /'aud'/],
      ['no exp', await issuer.token(claims, { noExp: true }), /'exp'/],
      ['malformed', 'not.a.jwt', /malformed/],
      // Not hex: a random request id (echoed as `instance`) cannot contain it by chance.
      ['garbage', 'xyz', /malformed/],
    ];
    await issuer.addKey('forger', false);
    cases.push(['forged (right kid, wrong key)', await issuer.token(claims, { kid: 'k1', signWith: 'forger' }), /signature/]);
    cases.push(['unknown kid', await issuer.token(claims, { kid: 'forger' }), /unknown key/]);
    for (const [name, token, msg] of cases) {
      const r = await bearer(token).get('/v1/namespace/%24/list');
      assert.equal(r.status, 401, `${name}: ${r.text}`);
      expectProblem(r, 401, 16, { msg: msg });
      assert.ok(!r.text.includes(token), `${name}: the token is not echoed`);
    }
    expectProblem(await new Api(gw.url, { authorization: 'Basic dXNlcjpwYXNz', 'x-service-database': t.name }).get('/v1/table'), 401, 16, {
      msg: /unsupported Authorization scheme/,
    });
    expectProblem(await new Api(gw.url, { authorization: 'Bearer', 'x-service-database': t.name }).get('/v1/table'), 401, 16);
  });

  it('fetches the key set again when a token names a new key (rotation)', async () => {
    const before = issuer.fetches;
    await issuer.addKey('k2');
    const rotated = await issuer.token({ sub: 'r', scope: 'read', databases: [t.name] }, { kid: 'k2' });
    assert.equal((await bearer(rotated).get('/v1/namespace/%24/list')).status, 200);
    assert.ok(issuer.fetches > before, 'the JWKS was fetched again');
    const fetched = issuer.fetches;
    assert.equal((await bearer(rotated).get('/v1/namespace/%24/list')).status, 200);
    assert.equal(issuer.fetches, fetched, 'known keys are served from the cache');
  });

  it('lets the official client in namespace mode authenticate with a bearer header', async () => {
    const token = await issuer.token({ sub: 'client', scope: 'write', databases: [t.name] });
    const db = await lancedb.connectNamespace('rest', {
      uri: gw.url,
      headers: { Authorization: `Bearer ${token}`, 'x-service-database': t.name },
    });
    try {
      await db.createNamespace(['from_client']);
      const table = await db.createTable('tok', [{ id: 1 }], ['from_client']);
      assert.equal(await table.countRows(), 1);
      assert.ok((await db.listNamespaces()).namespaces.includes('from_client'));
    } finally {
      db.close();
    }
  });

  it('records the token subject as the actor in the audit trail', async () => {
    const token = await issuer.token({ sub: 'auditor-sub', scope: 'write', databases: [t.name] });
    assert.equal((await bearer(token).post('/v1/namespace/audited_by_token/create', {})).status, 200);
    const audit = await operator(gw).get(`/admin/v1/databases/${t.name}/audit`);
    const event = audit.body.events.find((e: any) => e.target === 'audited_by_token');
    assert.equal(event.actor, 'token:auditor-sub');
    assert.equal(event.action, 'namespace.create');
  });

  it('lets a token with scope admin manage its database keys, and no other database', async () => {
    const admin = await issuer.token({ sub: 'db-admin', scope: 'admin', databases: [t.name] });
    const api = new Api(gw.url, { authorization: `Bearer ${admin}` });
    const issued = await api.post(`/admin/v1/databases/${t.name}/api-keys`, { role: 'read' });
    assert.equal(issued.status, 201, issued.text);
    assert.equal((await api.get(`/admin/v1/databases/${t.name}/api-keys`)).status, 200);
    expectProblem(await api.get(`/admin/v1/databases/${other.name}/api-keys`), 403, 15);
    expectProblem(await api.get('/admin/v1/databases'), 403, 15, { msg: /only the operator/ });
    const writer = await issuer.token({ sub: 'w', scope: 'write', databases: [t.name] });
    expectProblem(await new Api(gw.url, { authorization: `Bearer ${writer}` }).get(`/admin/v1/databases/${t.name}/api-keys`), 403, 15);
  });
});

forEachCatalog('credentials in the request body (identity)', (kind) => {
  const issuer = new TestIssuer();
  let gw: TestGateway;
  let t: Tenant;
  before(async () => {
    await issuer.start();
    gw = await startGateway(kind, issuer.env());
    t = await newTenant(gw);
  });
  after(async () => {
    await gw.close();
    await issuer.stop();
  });

  it('uses identity.api_key or identity.auth_token when the headers carry no credential', async () => {
    const anon = new Api(gw.url, { 'x-service-database': t.name });
    assert.equal((await anon.post('/v1/namespace/by_body_key/create', { identity: { api_key: t.writeKey } })).status, 200);
    const token = await issuer.token({ sub: 'b', scope: 'write', databases: [t.name] });
    assert.equal((await anon.post('/v1/namespace/by_body_token/create', { identity: { auth_token: token } })).status, 200);
    expectProblem(await anon.post('/v1/namespace/x/create', { identity: { api_key: 'lgw_wrong' } }), 401, 16);
    expectProblem(await anon.post('/v1/namespace/x/create', { identity: {} }), 401, 16, { msg: /missing credential/ });
    expectProblem(await anon.get('/v1/namespace/%24/list'), 401, 16);
  });

  it('prefers the headers over the body', async () => {
    const r = await new Api(gw.url, { 'x-api-key': t.readKey, 'x-service-database': t.name }).post('/v1/namespace/hdr/create', {
      identity: { api_key: t.writeKey },
    });
    expectProblem(r, 403, 15); // the header's read key decides, not the body's write key
  });
});

describe('bearer authentication switched off', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway('postgres');
  });
  after(() => gw.close());

  it('answers 401 naming the missing OAUTH_JWKS_URI', async () => {
    const t = await newTenant(gw);
    const r = await new Api(gw.url, { authorization: 'Bearer x.y.z', 'x-service-database': t.name }).get('/v1/table');
    expectProblem(r, 401, 16, { msg: /OAUTH_JWKS_URI/ });
  });
});
