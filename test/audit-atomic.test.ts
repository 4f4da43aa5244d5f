import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as lancedb from '@lancedb/lancedb';
import * as arrow from 'apache-arrow';
import { Client } from 'pg';
import { Api, CATALOG_KINDS, idPath, newTenant, operator, pgUrlFor, startGateway, Tenant, TestGateway } from './helpers/gateway';
import { expectProblem } from './helpers/assertions';

/**
 * An audit record is never lost while its change goes through: when the record cannot be written, the change does
 * not happen. Catalog changes write their record in their own transaction; data changes (in Lance) write it before
 * the engine commits. Postgres is made to refuse the records of chosen requests (a trigger on audit_events, keyed by
 * request id), and each such request must fail with nothing changed, while the same request without the trigger's
 * attention succeeds and is recorded. Real Postgres only: the embedded catalog offers the test no second connection.
 */
const REFUSE = 'refuse-audit-';

(CATALOG_KINDS.includes('postgres') ? describe : describe.skip)('audit records commit with their change [postgres]', () => {
  let gw: TestGateway;
  let t: Tenant;
  let op: Api;
  let pg: Client;
  let db: lancedb.Connection;

  const count = async () => {
    const r = await t.api.post('/v1/table/items/count_rows', {});
    assert.equal(r.status, 200, r.text);
    return { rows: Number(r.body), version: r.headers.get('x-lancedb-version') };
  };
  const events = async () => (await op.get(`/admin/v1/databases/${t.name}/audit?limit=10000`)).body.events as any[];

  before(async () => {
    gw = await startGateway('postgres');
    op = operator(gw);
    t = await newTenant(gw);
    db = await lancedb.connect(`db://${t.name}`, { apiKey: t.writeKey, hostOverride: gw.url });
    (
      await db.createTable(
        'items',
        Array.from({ length: 20 }, (_, i) => ({ id: i, text: `t${i}` })),
      )
    ).close();
    pg = new Client({ connectionString: pgUrlFor(gw.pgDatabase!) });
    await pg.connect();
    await pg.query(`
      CREATE FUNCTION test_refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.request_id LIKE '${REFUSE}%' THEN RAISE EXCEPTION 'audit record refused by the test'; END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER test_refuse_audit BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION test_refuse_audit();`);
  });
  after(async () => {
    db?.close();
    await pg?.end();
    await gw.close();
  });

  it('a data-plane delete whose record cannot be written deletes nothing', async () => {
    const before = await count();
    const r = await t.api.post('/v1/table/items/delete', { predicate: 'id < 10' }, { 'x-request-id': `${REFUSE}delete` });
    expectProblem(r, 500, 18);
    assert.deepEqual(await count(), before, 'no rows deleted, no new version');
    const ok = await t.api.post('/v1/table/items/delete', { predicate: 'id < 10' }, { 'x-request-id': 'recorded-delete' });
    assert.equal(ok.status, 200, ok.text);
    assert.equal((await count()).rows, 10);
    const e = (await events()).find((x) => x.request_id === 'recorded-delete');
    assert.equal(e?.details.outcome, 'committed');
    assert.equal(e?.details.num_deleted_rows, 10);
  });

  it('insert, update, add_columns and create_index whose record cannot be written change nothing', async () => {
    const before = await count();
    const stream = Buffer.from(arrow.tableToIPC(arrow.tableFromArrays({ id: Float64Array.from([100, 101]), text: ['a', 'b'] }), 'stream'));
    const insert = await fetch(`${gw.url}/v1/table/items/insert`, {
      method: 'POST',
      headers: {
        'x-api-key': t.writeKey,
        'x-service-database': t.name,
        'content-type': 'application/vnd.apache.arrow.stream',
        'x-request-id': `${REFUSE}insert`,
      },
      body: stream,
    });
    expectProblem({ status: insert.status, headers: insert.headers, text: '', body: await insert.json() }, 500, 18);
    expectProblem(
      await t.api.post('/v1/table/items/update', { updates: [['text', "'x'"]] }, { 'x-request-id': `${REFUSE}update` }),
      500,
      18,
    );
    expectProblem(
      await t.api.post(
        '/v1/table/items/add_columns',
        { new_columns: [{ name: 'z', expression: 'id * 2' }] },
        { 'x-request-id': `${REFUSE}add` },
      ),
      500,
      18,
    );
    expectProblem(
      await t.api.post('/v1/table/items/create_index', { column: 'id', index_type: 'BTREE' }, { 'x-request-id': `${REFUSE}index` }),
      500,
      18,
    );
    assert.deepEqual(await count(), before);
    assert.equal((await t.api.post('/v1/table/items/count_rows', { predicate: "text = 'x'" })).body, 0);
    assert.deepEqual((await t.api.post('/v1/table/items/index/list', {})).body.indexes, []);
    const d = await t.api.post('/v1/table/items/describe', {});
    assert.deepEqual(
      d.body.schema.fields.map((f: any) => f.name),
      ['id', 'text'],
    );
  });

  it('catalog changes whose record cannot be written are rolled back', async () => {
    expectProblem(await t.api.post(`/v1/namespace/${idPath('ns1')}/create`, {}, { 'x-request-id': `${REFUSE}ns` }), 500, 18);
    expectProblem(await t.api.post(`/v1/namespace/${idPath('ns1')}/describe`, {}), 404, 1);
    expectProblem(await t.api.post(`/v1/table/${idPath('decl')}/declare`, {}, { 'x-request-id': `${REFUSE}declare` }), 500, 18);
    expectProblem(await t.api.post(`/v1/table/${idPath('decl')}/describe`, {}), 404, 4);
    expectProblem(
      await t.api.post(`/v1/table/${idPath('items')}/rename`, { new_table_name: 'renamed' }, { 'x-request-id': `${REFUSE}rename` }),
      500,
      18,
    );
    assert.equal((await t.api.post(`/v1/table/${idPath('items')}/describe`, {})).status, 200);
    expectProblem(await t.api.post(`/v1/table/${idPath('items')}/drop`, {}, { 'x-request-id': `${REFUSE}drop` }), 500, 18);
    assert.equal((await count()).rows, 10, 'the table and its data are still there');

    const keys = (await op.get(`/admin/v1/databases/${t.name}/api-keys`)).body.api_keys;
    expectProblem(await op.post(`/admin/v1/databases/${t.name}/api-keys`, { role: 'read' }, { 'x-request-id': `${REFUSE}issue` }), 500, 18);
    expectProblem(await op.delete(`/admin/v1/databases/${t.name}/api-keys/${keys[0].id}`, { 'x-request-id': `${REFUSE}revoke` }), 500, 18);
    const after = (await op.get(`/admin/v1/databases/${t.name}/api-keys`)).body.api_keys;
    assert.deepEqual(after, keys, 'no key issued, none revoked');
    assert.equal((await t.api.post('/v1/table/items/count_rows', {})).status, 200, 'the write key still works');

    expectProblem(await op.post('/admin/v1/databases', { name: 'never' }, { 'x-request-id': `${REFUSE}db` }), 500, 18);
    expectProblem(await op.get('/admin/v1/databases/never'), 404, 0);
    expectProblem(await op.delete(`/admin/v1/databases/${t.name}`, { 'x-request-id': `${REFUSE}dbdel` }), 500, 18);
    assert.equal((await op.get(`/admin/v1/databases/${t.name}`)).status, 200);

    assert.ok(!(await events()).some((e) => String(e.request_id).startsWith(REFUSE)));
    // Without the trigger's attention the same changes go through and are recorded with them.
    assert.equal((await t.api.post(`/v1/namespace/${idPath('ns1')}/create`, {}, { 'x-request-id': 'recorded-ns' })).status, 200);
    assert.ok((await events()).some((e) => e.request_id === 'recorded-ns' && e.action === 'namespace.create'));
  });
});
