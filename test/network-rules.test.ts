import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { forEachCatalog, newTenant, operator, rawRequest, Reply, startGateway, TestGateway } from './helpers/gateway';
import { expectProblem } from './helpers/assertions';
import { TestIssuer } from './helpers/jwks';

/**
 * Network rules of a database (docs/access-control.md, "Network rules"): allowed source CIDRs, private-only, the
 * client address behind trusted proxies. Requests leave from several loopback addresses (127.0.0.0/8 is all local
 * on Linux) through node:http's `localAddress`.
 */
const PERMISSION_DENIED = 15;

function from(
  localAddress: string,
  gw: { url: string },
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: unknown,
): Promise<Reply> {
  return rawRequest(gw.url, method, path, headers, body, localAddress);
}

const LIST = '/v1/namespace/%24/list';
const rules = (gw: TestGateway, db: string, network_rules: unknown) =>
  operator(gw).request('PATCH', `/admin/v1/databases/${db}`, { network_rules });

/** The refusal, with what differs between any two answers (the request id) left out. */
const refusal = (r: Reply) => {
  expectProblem(r, 403, PERMISSION_DENIED);
  const { instance: _id, ...rest } = r.body;
  return rest;
};

forEachCatalog('network rules', (kind) => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway(kind, { PRIVATE_HOST_SUFFIXES: '.pl.example.com, .internal.example.com' });
  });
  after(() => gw.close());

  it('admits only the allowed source CIDRs, applies a change at once and clears with null', async () => {
    const t = await newTenant(gw);
    const h = { 'x-api-key': t.writeKey, 'x-service-database': t.name };
    const set = await rules(gw, t.name, { allowed_cidrs: ['127.0.0.2', '2001:db8::1/32'] });
    assert.equal(set.status, 200, set.text);
    assert.deepEqual(set.body.network_rules, { allowed_cidrs: ['127.0.0.2/32', '2001:db8::/32'], private_only: false });
    assert.deepEqual((await operator(gw).get(`/admin/v1/databases/${t.name}`)).body.network_rules, set.body.network_rules);

    assert.equal((await from('127.0.0.2', gw, 'GET', LIST, h)).status, 200);
    refusal(await from('127.0.0.3', gw, 'GET', LIST, h));
    refusal(await from('127.0.0.1', gw, 'GET', LIST, h));

    assert.equal((await rules(gw, t.name, { allowed_cidrs: ['127.0.0.0/30'] })).status, 200);
    assert.equal((await from('127.0.0.3', gw, 'GET', LIST, h)).status, 200, 'a widened range admits at once');
    refusal(await from('127.0.0.4', gw, 'GET', LIST, h));

    const cleared = await rules(gw, t.name, null);
    assert.equal(cleared.status, 200, cleared.text);
    assert.deepEqual(cleared.body.network_rules, { allowed_cidrs: [], private_only: false });
    assert.equal((await from('127.0.0.4', gw, 'GET', LIST, h)).status, 200, 'no rules: any source');
  });

  it('ignores X-Forwarded-For and Forwarded when no proxy is trusted', async () => {
    const t = await newTenant(gw);
    assert.equal((await rules(gw, t.name, { allowed_cidrs: ['127.0.0.3/32'] })).status, 200);
    const h = { 'x-api-key': t.readKey, 'x-service-database': t.name };
    refusal(await from('127.0.0.2', gw, 'GET', LIST, { ...h, 'x-forwarded-for': '127.0.0.3' }));
    refusal(await from('127.0.0.2', gw, 'GET', LIST, { ...h, forwarded: 'for=127.0.0.3' }));
    assert.equal((await from('127.0.0.3', gw, 'GET', LIST, { ...h, 'x-forwarded-for': '10.9.9.9' })).status, 200);
  });

  it('a refused request changes nothing and says the same whether the database exists or not', async () => {
    const t = await newTenant(gw);
    assert.equal((await rules(gw, t.name, { allowed_cidrs: ['127.0.0.3/32'] })).status, 200);
    const write = { 'x-api-key': t.writeKey };
    const refused = await from('127.0.0.2', gw, 'POST', '/v1/namespace/blocked/create', { ...write, 'x-service-database': t.name }, {});
    const existing = refusal(refused);
    const missing = refusal(
      await from('127.0.0.2', gw, 'POST', '/v1/namespace/blocked/create', { ...write, 'x-service-database': 'no_such_db_x' }, {}),
    );
    assert.deepEqual(missing, existing, 'the same answer for a database that does not exist');
    assert.ok(!refused.text.includes(t.name) && !refused.text.includes('127.0.0'), `no database or rule in the answer: ${refused.text}`);

    const list = await from('127.0.0.3', gw, 'GET', LIST, { ...write, 'x-service-database': t.name });
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(list.body.namespaces, [], 'the refused create made nothing');
  });

  it('guards the database-admin routes of the database too, but not the operator key', async () => {
    const t = await newTenant(gw);
    const admin = (await operator(gw).post(`/admin/v1/databases/${t.name}/api-keys`, { role: 'admin' })).body.api_key;
    assert.equal((await rules(gw, t.name, { allowed_cidrs: ['127.0.0.3/32'] })).status, 200);
    const keys = `/admin/v1/databases/${t.name}/api-keys`;
    refusal(await from('127.0.0.2', gw, 'GET', keys, { 'x-api-key': admin }));
    refusal(await from('127.0.0.2', gw, 'POST', keys, { 'x-api-key': admin }, { role: 'write' }));
    assert.equal((await from('127.0.0.3', gw, 'GET', keys, { 'x-api-key': admin })).status, 200);
    const asOperator = await from('127.0.0.2', gw, 'GET', keys, { 'x-api-key': operator(gw).headers['x-api-key'] });
    assert.equal(asOperator.status, 200, 'the operator key is not subject to database rules');
    assert.equal(asOperator.body.api_keys.length, 3, 'the refused issue made no key');
  });

  it('private-only: answers only under a private host suffix, whatever header names the database', async () => {
    const t = await newTenant(gw);
    const set = await rules(gw, t.name, { private_only: true });
    assert.equal(set.status, 200, set.text);
    assert.deepEqual(set.body.network_rules, { allowed_cidrs: [], private_only: true });
    const h = { 'x-api-key': t.readKey, 'x-service-database': t.name };
    assert.equal((await from('127.0.0.1', gw, 'GET', LIST, { ...h, host: 'gw.pl.example.com' })).status, 200);
    assert.equal((await from('127.0.0.1', gw, 'GET', LIST, { ...h, host: 'GW.Internal.Example.com:8443' })).status, 200);
    for (const host of ['gw.example.com', 'pl.example.com', 'x.pl.example.com.evil.net', '127.0.0.1']) {
      refusal(await from('127.0.0.1', gw, 'GET', LIST, { ...h, host }));
    }
    // Both rules at once: the private host and the source address.
    assert.equal((await rules(gw, t.name, { allowed_cidrs: ['127.0.0.2/32'] })).body.network_rules.private_only, true, 'absent: unchanged');
    refusal(await from('127.0.0.1', gw, 'GET', LIST, { ...h, host: 'gw.pl.example.com' }));
    assert.equal((await from('127.0.0.2', gw, 'GET', LIST, { ...h, host: 'gw.pl.example.com' })).status, 200);
  });

  it('validates the rules (400), records changes in the audit trail and shows them on create', async () => {
    const op = operator(gw);
    for (const bad of ['10.0.0.0/33', 'any', '::1/129', '10.0.0', '', 12]) {
      expectProblem(await op.post('/admin/v1/databases', { name: `bad_${kind}`, network_rules: { allowed_cidrs: [bad] } }), 400, 13, {
        what: String(bad),
      });
    }
    expectProblem(await op.post('/admin/v1/databases', { name: `bad_${kind}`, network_rules: { other: 1 } }), 400, 13);
    expectProblem(await op.get(`/admin/v1/databases/bad_${kind}`), 404, 0);

    const created = await op.post('/admin/v1/databases', {
      name: `netdb_${kind}`,
      network_rules: { allowed_cidrs: ['10.1.2.3/8', '10.0.0.0/8'], private_only: true },
    });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(created.body.network_rules, { allowed_cidrs: ['10.0.0.0/8'], private_only: true });
    expectProblem(await rules(gw, `netdb_${kind}`, { allowed_cidrs: ['fe80::/10', 'nope'] }), 400, 13, { msg: 'nope' });
    assert.equal((await rules(gw, `netdb_${kind}`, { allowed_cidrs: ['fe80::/10'] })).status, 200);

    const events = (await op.get(`/admin/v1/databases/netdb_${kind}/audit`)).body.events as any[];
    const update = events.find((e) => e.action === 'database.update');
    assert.ok(update, JSON.stringify(events));
    assert.deepEqual(update.details.network_rules, { allowed_cidrs: ['fe80::/10'] });
    const create = events.find((e) => e.action === 'database.create');
    assert.deepEqual(create.details.network_rules, { allowed_cidrs: ['10.1.2.3/8', '10.0.0.0/8'], private_only: true });
  });
  it('/openapi.json documents network_rules on create, update and the database answer', async () => {
    const doc = (await operator(gw).get('/openapi.json')).body;
    const ref = (op: any) => {
      const schema = op.requestBody.content['application/json'].schema;
      return schema.$ref ? doc.components.schemas[schema.$ref.split('/').pop()] : schema;
    };
    const create = ref(doc.paths['/admin/v1/databases'].post);
    const update = ref(doc.paths['/admin/v1/databases/{name}'].patch);
    for (const body of [create, update]) {
      assert.ok(JSON.stringify(body.properties.network_rules).includes('allowed_cidrs'), JSON.stringify(body.properties.network_rules));
    }
    assert.ok(doc.components.schemas.Database.properties.network_rules, 'the answer shows the rules');
  });
});

forEachCatalog('network rules behind a trusted proxy', (kind) => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway(kind, { TRUSTED_PROXIES: '127.0.0.1/32' });
  });
  after(() => gw.close());

  it('takes the client from X-Forwarded-For only when the socket peer is a trusted proxy', async () => {
    const t = await newTenant(gw);
    assert.equal((await rules(gw, t.name, { allowed_cidrs: ['127.0.0.3/32'] })).status, 200);
    const h = { 'x-api-key': t.readKey, 'x-service-database': t.name };
    assert.equal((await from('127.0.0.1', gw, 'GET', LIST, { ...h, 'x-forwarded-for': '127.0.0.3' })).status, 200);
    // Walked from the right: what the client put to the left of its own address is not believed.
    assert.equal((await from('127.0.0.1', gw, 'GET', LIST, { ...h, 'x-forwarded-for': '10.6.6.6, 127.0.0.3' })).status, 200);
    refusal(await from('127.0.0.1', gw, 'GET', LIST, { ...h, 'x-forwarded-for': '127.0.0.3, 10.6.6.6' }));
    refusal(await from('127.0.0.1', gw, 'GET', LIST, h));
    // Not from the proxy: the header is the client's own, and ignored.
    refusal(await from('127.0.0.2', gw, 'GET', LIST, { ...h, 'x-forwarded-for': '127.0.0.3' }));
    // Only the configured header (FORWARDED_HEADER, x-forwarded-for by default) is read.
    refusal(await from('127.0.0.1', gw, 'GET', LIST, { ...h, forwarded: 'for=127.0.0.3' }));
  });

  it('refuses private_only while no PRIVATE_HOST_SUFFIXES is set', async () => {
    const t = await newTenant(gw);
    expectProblem(await rules(gw, t.name, { private_only: true }), 400, 13, { msg: 'PRIVATE_HOST_SUFFIXES' });
  });
});

forEachCatalog('network rules behind a proxy that writes Forwarded', (kind) => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway(kind, { TRUSTED_PROXIES: '127.0.0.1', FORWARDED_HEADER: 'forwarded' });
  });
  after(() => gw.close());

  it('takes the client from the for= of RFC 7239 Forwarded, and ignores X-Forwarded-For', async () => {
    const t = await newTenant(gw);
    assert.equal((await rules(gw, t.name, { allowed_cidrs: ['127.0.0.3/32'] })).status, 200);
    const h = { 'x-api-key': t.readKey, 'x-service-database': t.name };
    assert.equal((await from('127.0.0.1', gw, 'GET', LIST, { ...h, forwarded: 'for="127.0.0.3:4711";proto=https' })).status, 200);
    refusal(await from('127.0.0.1', gw, 'GET', LIST, { ...h, forwarded: 'for=127.0.0.3, for=10.6.6.6' }));
    refusal(await from('127.0.0.1', gw, 'GET', LIST, { ...h, 'x-forwarded-for': '127.0.0.3' }));
  });
});

forEachCatalog('network rules for bearer tokens', (kind) => {
  const issuer = new TestIssuer();
  let gw: TestGateway;
  before(async () => {
    await issuer.start();
    gw = await startGateway(kind, issuer.env());
  });
  after(async () => {
    await gw.close();
    await issuer.stop();
  });

  it("applies the database's rules to a token (resolved by name), on catalog and database-admin routes", async () => {
    const t = await newTenant(gw);
    assert.equal((await rules(gw, t.name, { allowed_cidrs: ['127.0.0.3/32'] })).status, 200);
    const token = await issuer.token({ sub: 'alice', scope: 'admin', databases: [t.name] });
    const h = { authorization: `Bearer ${token}`, 'x-service-database': t.name };
    assert.equal((await from('127.0.0.3', gw, 'GET', LIST, h)).status, 200);
    refusal(await from('127.0.0.2', gw, 'GET', LIST, h));
    refusal(await from('127.0.0.2', gw, 'POST', '/v1/namespace/by_token/create', h, {}));
    const keys = `/admin/v1/databases/${t.name}/api-keys`;
    refusal(await from('127.0.0.2', gw, 'GET', keys, { authorization: `Bearer ${token}` }));
    assert.equal((await from('127.0.0.3', gw, 'GET', keys, { authorization: `Bearer ${token}` })).status, 200);
    assert.deepEqual((await from('127.0.0.3', gw, 'GET', LIST, h)).body.namespaces, [], 'the refused create made nothing');
  });
});
