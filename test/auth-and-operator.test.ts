import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from 'pg';
import { Api, ADMIN_KEY, forEachCatalog, newTenant, operator, pgUrlFor, startGateway, TestGateway } from './helpers/gateway';
import { expectProblem } from './helpers/assertions';

forEachCatalog('authentication and tenancy', (kind) => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway(kind);
  });
  after(() => gw.close());

  it('answers 401 with WWW-Authenticate when the key is missing or unknown', async () => {
    const t = await newTenant(gw);
    const anon = new Api(gw.url, { 'x-service-database': t.name });
    const missing = await anon.get('/v1/namespace/%24/list');
    expectProblem(missing, 401, 16);
    assert.equal(missing.body.type, '/errors/unauthorized-request');
    assert.equal(missing.headers.get('www-authenticate'), 'Bearer');
    const unknown = await anon.get('/v1/namespace/%24/list', { 'x-api-key': 'lgw_not-a-real-key' });
    expectProblem(unknown, 401, 16);
  });

  it('needs a database: missing header → 400 naming it; a key addressing an unknown database → 403 like any other not its own', async () => {
    const t = await newTenant(gw);
    const noDb = await new Api(gw.url, { 'x-api-key': t.writeKey }).get('/v1/namespace/%24/list');
    expectProblem(noDb, 400, 13);
    assert.match(noDb.body.error, /x-service-database/);
    const unknownDb = await t.api.get('/v1/namespace/%24/list', { 'x-service-database': 'no_such_db' });
    expectProblem(unknownDb, 403, 15);
    assert.match(unknownDb.body.error, /no_such_db/);
  });

  it("refuses a valid key of another database (403) and keeps each database's catalog apart", async () => {
    const a = await newTenant(gw);
    const b = await newTenant(gw);
    assert.equal((await a.api.post('/v1/namespace/shared/create', {})).status, 200);
    const cross = await a.api.get('/v1/namespace/%24/list', { 'x-service-database': b.name });
    expectProblem(cross, 403, 15);
    assert.equal(cross.body.type, '/errors/forbidden-request');
    assert.deepEqual((await b.api.get('/v1/namespace/%24/list')).body.namespaces, []);
    assert.equal((await b.api.post('/v1/namespace/shared/exists', {})).status, 404);
    assert.equal((await b.api.post('/v1/namespace/shared/create', {})).status, 200, 'same name, other database');
  });

  it('lets a read key read but not change anything; write implies read', async () => {
    const t = await newTenant(gw);
    assert.equal((await t.api.post('/v1/namespace/ns/create', {})).status, 200);
    expectProblem(await t.reader.post('/v1/namespace/ns2/create', {}), 403, 15);
    expectProblem(await t.reader.post('/v1/namespace/ns/drop', {}), 403, 15);
    expectProblem(await t.reader.post('/v1/table/ns%24t/declare', {}), 403, 15);
    assert.equal((await t.reader.post('/v1/namespace/ns/describe', {})).status, 200);
    assert.equal((await t.reader.get('/v1/namespace/%24/list')).status, 200);
    assert.equal((await t.reader.get('/v1/table')).status, 200);
    assert.equal((await t.api.post('/v1/namespace/ns/exists', {})).status, 200);
    assert.equal((await t.reader.post('/v1/namespace/ns/exists', {})).status, 200);
  });

  it('stops accepting a key as soon as it is deleted', async () => {
    const t = await newTenant(gw);
    const op = operator(gw);
    const keys = await op.get(`/admin/v1/databases/${t.name}/api-keys`);
    const readKeyId = keys.body.api_keys.find((k: any) => k.role === 'read').id;
    assert.equal((await t.reader.get('/v1/namespace/%24/list')).status, 200);
    assert.equal((await op.delete(`/admin/v1/databases/${t.name}/api-keys/${readKeyId}`)).status, 204);
    expectProblem(await t.reader.get('/v1/namespace/%24/list'), 401, 16);
    assert.equal((await t.api.get('/v1/namespace/%24/list')).status, 200, 'the other key still works');
  });
});

forEachCatalog('operator API', (kind) => {
  let gw: TestGateway;
  let op: Api;
  before(async () => {
    gw = await startGateway(kind);
    op = operator(gw);
  });
  after(() => gw.close());

  it('requires the operator key', async () => {
    expectProblem(await new Api(gw.url).get('/admin/v1/databases'), 401, 16);
    expectProblem(await new Api(gw.url, { 'x-api-key': 'wrong-operator-key-000' }).get('/admin/v1/databases'), 401, 16);
    const t = await newTenant(gw);
    // A valid credential that is not the operator's is authenticated but not allowed.
    expectProblem(await new Api(gw.url, { 'x-api-key': t.writeKey }).get('/admin/v1/databases'), 403, 15);
  });

  it('creates, lists, reads and deletes databases', async () => {
    const created = await op.post('/admin/v1/databases', { name: 'acme', properties: { plan: 'gold' } });
    assert.equal(created.status, 201);
    assert.equal(created.body.name, 'acme');
    assert.deepEqual(created.body.properties, { plan: 'gold' });
    assert.match(created.body.id, /^[0-9a-f-]{36}$/);
    assert.ok(!Number.isNaN(Date.parse(created.body.created_at)));
    expectProblem(await op.post('/admin/v1/databases', { name: 'acme' }), 409, 14);
    for (const bad of ['a b', '', '..', '.', 'x/y', 'ü']) {
      expectProblem(await op.post('/admin/v1/databases', { name: bad }), 400, 13);
    }
    expectProblem(await op.post('/admin/v1/databases', {}), 400, 13);
    expectProblem(await op.post('/admin/v1/databases', { name: 'p', properties: { n: 1 } }), 400, 13);

    for (const n of ['acme2', 'acme3', 'acme4']) assert.equal((await op.post('/admin/v1/databases', { name: n })).status, 201);
    const seen: string[] = [];
    let token: string | undefined;
    do {
      const page = await op.get(`/admin/v1/databases?limit=2${token ? `&page_token=${token}` : ''}`);
      assert.equal(page.status, 200);
      assert.ok(page.body.databases.length <= 2);
      seen.push(...page.body.databases.map((d: any) => d.name));
      token = page.body.page_token;
    } while (token);
    assert.deepEqual(
      seen.filter((n) => n.startsWith('acme')),
      ['acme', 'acme2', 'acme3', 'acme4'],
    );

    assert.equal((await op.get('/admin/v1/databases/acme')).body.properties.plan, 'gold');
    expectProblem(await op.get('/admin/v1/databases/nope'), 404, 0);
    assert.equal((await op.delete('/admin/v1/databases/acme')).status, 204);
    expectProblem(await op.get('/admin/v1/databases/acme'), 404, 0);
    expectProblem(await op.delete('/admin/v1/databases/acme'), 404, 0);
  });

  it('issues keys whose secret is shown once and stored only as a SHA-256 digest', async () => {
    assert.equal((await op.post('/admin/v1/databases', { name: 'keys_db' })).status, 201);
    const issued = await op.post('/admin/v1/databases/keys_db/api-keys', { role: 'write', description: 'ci' });
    assert.equal(issued.status, 201);
    assert.match(issued.body.api_key, /^lgw_[A-Za-z0-9_-]{43}$/);
    assert.equal(issued.body.role, 'write');
    expectProblem(await op.post('/admin/v1/databases/keys_db/api-keys', { role: 'root' }), 400, 13);
    expectProblem(await op.post('/admin/v1/databases/nope/api-keys', { role: 'read' }), 404, 0);

    const listing = await op.get('/admin/v1/databases/keys_db/api-keys');
    assert.equal(listing.status, 200);
    assert.equal(listing.body.api_keys.length, 1);
    assert.equal(listing.body.api_keys[0].id, issued.body.id);
    assert.ok(!listing.text.includes(issued.body.api_key), 'the listing never shows the secret');
    assert.ok(!('api_key' in listing.body.api_keys[0]) && !('hash' in listing.body.api_keys[0]));

    if (kind === 'postgres') {
      const c = new Client({ connectionString: pgUrlFor(gw.pgDatabase!) });
      await c.connect();
      try {
        const { rows } = await c.query('SELECT * FROM api_keys WHERE id = $1', [issued.body.id]);
        assert.equal(rows[0].hash, createHash('sha256').update(issued.body.api_key).digest('hex'));
        assert.ok(!JSON.stringify(rows).includes(issued.body.api_key), 'no column holds the secret');
      } finally {
        await c.end();
      }
    }
    assert.equal((await op.delete(`/admin/v1/databases/keys_db/api-keys/${issued.body.id}`)).status, 204);
    expectProblem(await op.delete(`/admin/v1/databases/keys_db/api-keys/${issued.body.id}`), 404, 0);
  });

  it('deleting a database revokes its keys and removes its catalog and storage folder', async () => {
    const t = await newTenant(gw);
    assert.equal((await t.api.post('/v1/namespace/ns/create', {})).status, 200);
    const declared = await t.api.post('/v1/table/ns%24t/declare', {});
    assert.equal(declared.status, 200);
    const folder = path.join(gw.config.storageRoot, t.name);
    assert.ok(fs.existsSync(declared.body.location));
    assert.equal((await op.delete(`/admin/v1/databases/${t.name}`)).status, 204);
    assert.ok(!fs.existsSync(folder), 'storage folder removed');
    expectProblem(await t.api.get('/v1/namespace/%24/list'), 401, 16);
    // Re-creating the name starts from nothing.
    const again = await newTenant(gw, t.name);
    assert.deepEqual((await again.api.get('/v1/namespace/%24/list')).body.namespaces, []);
    assert.deepEqual((await again.api.get('/v1/table')).body.tables, []);
  });
});

describe('operator API disabled', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway('postgres', { ADMIN_API_KEY: '' });
  });
  after(() => gw.close());

  it('answers 403 when ADMIN_API_KEY is unset, whatever key is sent', async () => {
    const res = await new Api(gw.url, { 'x-api-key': ADMIN_KEY }).get('/admin/v1/databases');
    expectProblem(res, 403, 15);
    assert.match(res.body.error, /ADMIN_API_KEY/);
  });
});
