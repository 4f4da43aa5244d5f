import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { ADMIN_KEY, Api, forEachCatalog, newTenant, operator, startGateway, Tenant, TestGateway } from './helpers/gateway';
import { expectProblem } from './helpers/assertions';

/**
 * "Who am I" (GET /v1/credential) and the operator key on a database's REST routes: what the console asks before
 * it offers an action, and how the operator browses any database.
 */
forEachCatalog('the calling credential and the operator on the REST routes', (kind) => {
  let gw: TestGateway;
  let t: Tenant;
  let other: Tenant;
  before(async () => {
    gw = await startGateway(kind);
    t = await newTenant(gw);
    other = await newTenant(gw);
  });
  after(async () => gw?.close());

  const as = (key: string, database: string) => new Api(gw.url, { 'x-api-key': key, 'x-service-database': database });

  it('describes a read key, a write key and a scoped key, and never shows a secret', async () => {
    const read = await t.reader.get('/v1/credential');
    assert.equal(read.status, 200, read.text);
    assert.equal(read.body.database, t.name);
    assert.equal(read.body.kind, 'key');
    assert.match(read.body.actor, /^key:[0-9a-f-]{36}$/);
    assert.equal(read.body.role, 'read');
    assert.equal(read.body.grants, null);
    assert.deepEqual(read.body.database_privileges, ['describe', 'select']);
    assert.ok(!read.text.includes(t.readKey), 'no secret in the answer');

    const write = await t.api.get('/v1/credential');
    assert.equal(write.body.role, 'write');
    assert.deepEqual(write.body.database_privileges, ['describe', 'select', 'insert', 'modify', 'create', 'manage']);

    const grants = [{ privileges: ['select', 'insert', 'admin'], on: { namespace: ['prod'] } }];
    const made = await operator(gw).post(`/admin/v1/databases/${t.name}/api-keys`, {
      role: 'write',
      grants: [{ privileges: ['select', 'insert'], on: { namespace: ['prod'] } }],
    });
    assert.equal(made.status, 201, made.text);
    const scoped = await as(made.body.api_key, t.name).get('/v1/credential');
    assert.equal(scoped.status, 200, scoped.text);
    assert.deepEqual(scoped.body.grants, [{ privileges: ['select', 'insert'], on: { namespace: ['prod'] } }]);
    assert.deepEqual(scoped.body.database_privileges, []);
    assert.notDeepEqual(scoped.body.grants, grants);
  });

  it("refuses another database's name and a missing credential", async () => {
    expectProblem(await as(t.readKey, other.name).get('/v1/credential'), 403, 15);
    expectProblem(await new Api(gw.url, { 'x-service-database': t.name }).get('/v1/credential'), 401, 16);
  });

  it('lets the operator key act as an admin of any database, audited as the operator', async () => {
    const op = as(ADMIN_KEY, t.name);
    const me = await op.get('/v1/credential');
    assert.equal(me.status, 200, me.text);
    assert.deepEqual(
      { kind: me.body.kind, actor: me.body.actor, role: me.body.role, grants: me.body.grants },
      { kind: 'operator', actor: 'operator', role: 'admin', grants: null },
    );
    assert.ok(!me.text.includes(ADMIN_KEY));

    const created = await op.post('/v1/namespace/opns/create', {});
    assert.equal(created.status, 200, created.text);
    assert.deepEqual((await t.reader.get('/v1/namespace/%24/list')).body.namespaces, ['opns']);
    const audit = await operator(gw).get(`/admin/v1/databases/${t.name}/audit`);
    const ev = audit.body.events.find((e: any) => e.action === 'namespace.create');
    assert.ok(ev, audit.text);
    assert.equal(ev.actor, 'operator');

    // Another database is the operator's too; a name that does not exist is a 404, not a 403.
    assert.equal((await as(ADMIN_KEY, other.name).get('/v1/namespace/%24/list')).status, 200);
    expectProblem(await as(ADMIN_KEY, 'no_such_db_x').get('/v1/namespace/%24/list'), 404, 1);
  });

  it("is not throttled by a database's rate limit (its tenant's keys are)", async () => {
    const limited = await operator(gw).request('PATCH', `/admin/v1/databases/${other.name}`, {
      rate_limit: { limit: 1, window_ms: 60000 },
    });
    assert.equal(limited.status, 200, limited.text);
    const op = as(ADMIN_KEY, other.name);
    for (let i = 0; i < 3; i++) assert.equal((await op.get('/v1/namespace/%24/list')).status, 200);
    const statuses = [(await other.reader.get('/v1/namespace/%24/list')).status, (await other.reader.get('/v1/namespace/%24/list')).status];
    assert.deepEqual(statuses, [200, 503]);
  });
});
