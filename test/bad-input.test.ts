import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as lancedb from '@lancedb/lancedb';
import { Api, forEachCatalog, idPath, newTenant, operator, rawRequest, startGateway, Tenant, TestGateway } from './helpers/gateway';
import { expectProblem } from './helpers/assertions';

/**
 * A caller's bad input is a 400 with the problem body (code 13) naming the problem, never a 5xx (the official
 * clients retry those, multiplying the load) and never a crash: NUL characters and unpaired UTF-16 surrogates
 * anywhere in the input, SQL forms the engine panics on, and index parameters it cannot take. Each case also checks
 * that nothing changed and that the gateway still serves.
 */
forEachCatalog('bad input is a 400, never a 5xx', (kind) => {
  let gw: TestGateway;
  let t: Tenant;
  let op: Api;
  let db: lancedb.Connection;

  const ROWS = 50;
  const rows = Array.from({ length: ROWS }, (_, i) => ({ id: i, text: `hello world ${i}`, vector: [i, i * 2, 1, 0.5] }));

  /** Rows and version of the table, read through the gateway. */
  async function state(table = 'items'): Promise<{ rows: number; version: string | null }> {
    const r = await t.api.post(`/v1/table/${table}/count_rows`, {});
    assert.equal(r.status, 200, r.text);
    return { rows: Number(r.body), version: r.headers.get('x-lancedb-version') };
  }

  async function auditEvents(): Promise<any[]> {
    const r = await op.get(`/admin/v1/databases/${t.name}/audit?limit=10000`);
    assert.equal(r.status, 200, r.text);
    return r.body.events;
  }

  async function healthy(): Promise<void> {
    assert.equal((await new Api(gw.url).get('/healthz')).status, 200);
    assert.equal((await state()).rows, ROWS);
  }

  before(async () => {
    gw = await startGateway(kind);
    op = operator(gw);
    t = await newTenant(gw);
    db = await lancedb.connect(`db://${t.name}`, { apiKey: t.writeKey, hostOverride: gw.url });
    (await db.createTable('items', rows)).close();
  });
  after(async () => {
    db?.close();
    await gw.close();
  });

  describe('NUL and unpaired surrogates', () => {
    it('in namespace properties: 400 naming the field, nothing created', async () => {
      expectProblem(await t.api.post('/v1/namespace/n/create', { properties: { p: 'a\u0000b' } }), 400, 13, {
        msg: 'properties.p contains a NUL character',
      });
      expectProblem(await t.api.post('/v1/namespace/n/create', { properties: { p: 'a\ud800b' } }), 400, 13, {
        msg: 'properties.p contains an unpaired UTF-16 surrogate',
      });
      expectProblem(await t.api.post('/v1/namespace/n/create', { properties: { 'k\udc00': 'v' } }), 400, 13, {
        msg: 'a key of properties',
      });
      expectProblem(await t.api.post('/v1/namespace/n/describe', {}), 404, 1);
      assert.ok(!(await auditEvents()).some((e) => e.target === 'n'));
      await healthy();
    });

    it('in table properties and key descriptions: 400, nothing created', async () => {
      expectProblem(await t.api.post(`/v1/table/${idPath('decl')}/declare`, { properties: { d: 'x\u0000' } }), 400, 13, {
        msg: 'properties.d contains a NUL character',
      });
      expectProblem(await t.api.post(`/v1/table/${idPath('decl')}/describe`, {}), 404, 4);
      const keys = (await op.get(`/admin/v1/databases/${t.name}/api-keys`)).body.api_keys.length;
      expectProblem(await op.post(`/admin/v1/databases/${t.name}/api-keys`, { role: 'read', description: 'lone \udbff' }), 400, 13, {
        msg: 'description contains an unpaired UTF-16 surrogate',
      });
      expectProblem(await op.post(`/admin/v1/databases/${t.name}/api-keys`, { role: 'read', description: 'a\u0000' }), 400, 13, {
        msg: 'description contains a NUL character',
      });
      assert.equal((await op.get(`/admin/v1/databases/${t.name}/api-keys`)).body.api_keys.length, keys);
      expectProblem(await op.post('/admin/v1/databases', { name: 'x', properties: { plan: '\ud83d' } }), 400, 13, {
        msg: 'properties.plan',
      });
      await healthy();
    });

    it('in a page token (decoded ["a\\u0000","b"]): 400', async () => {
      expectProblem(await t.api.get('/v1/table?page_token=WyJhXHUwMDAwIiwiYiJd'), 400, 13, {
        msg: 'page_token[0] contains a NUL character',
      });
      const token = (v: unknown) => Buffer.from(JSON.stringify(v), 'utf8').toString('base64url');
      expectProblem(await op.get(`/admin/v1/databases?page_token=${token('a\u0000')}`), 400, 13, {
        msg: 'page_token contains a NUL character',
      });
      // JSON.stringify writes a lone surrogate as the escape \ud800, which the token decoder turns back into one.
      expectProblem(await t.api.get(`/v1/table?page_token=${token(['\ud800', 'b'])}`), 400, 13, { msg: 'unpaired UTF-16 surrogate' });
      await healthy();
    });

    it('in path ids and query parameters: 400 naming them', async () => {
      expectProblem(await op.get('/admin/v1/databases/%00'), 400, 13, { msg: 'path parameter name contains a NUL character' });
      expectProblem(await t.api.post('/v1/namespace/a%00b/create', {}), 400, 13, { msg: 'path parameter id contains a NUL character' });
      expectProblem(await t.api.get('/v1/table/items%00/stats'), 400, 13, { msg: 'path parameter id' });
      expectProblem(await t.api.get('/v1/namespace/%24/list?delimiter=%00'), 400, 13, {
        msg: 'query parameter delimiter contains a NUL character',
      });
      expectProblem(await t.api.get('/v1/table/items/count_rows?predicate=%00'), 400, 13, { msg: 'query parameter predicate' });
      // Raw bytes on the socket, as a hostile client sends them.
      const raw = await rawRequest(gw.url, 'GET', '/admin/v1/databases/%00', {
        'x-api-key': (op.headers as Record<string, string>)['x-api-key'],
      });
      expectProblem(raw, 400, 13);
      expectProblem(await t.api.post(`/v1/namespace/${idPath('ok')}/create`, { id: ['o\u0000k'] }), 400, 13, {
        msg: 'id[0] contains a NUL character',
      });
      await healthy();
    });

    it('a delete predicate containing \\u0000: 400, nothing deleted, nothing recorded', async () => {
      const before = await state();
      const r = await t.api.post(
        '/v1/table/items/delete',
        { predicate: "text = 'a\u0000b' OR id >= 0" },
        { 'x-request-id': `nul-delete-${kind}` },
      );
      expectProblem(r, 400, 13, { msg: 'predicate contains a NUL character' });
      assert.deepEqual(await state(), before);
      assert.ok(!(await auditEvents()).some((e) => e.request_id === `nul-delete-${kind}`));
      await healthy();
    });

    it('a namespace path longer than the catalog can index: 400, nothing created (not a 500)', async () => {
      const long = Array.from({ length: 11 }, (_, i) => `${i}`.padEnd(254, 'n')).join('$');
      expectProblem(await t.api.post(`/v1/namespace/${long}/create`, {}), 400, 13, { msg: 'longer than 2000 characters' });
      expectProblem(await t.api.post(`/v1/table/${long}$x/declare`, {}), 400, 13, { msg: 'longer than 2000 characters' });
      const ok = Array.from({ length: 7 }, (_, i) => `${i}`.padEnd(254, 'n'));
      for (let d = 1; d <= ok.length; d++) {
        const r = await t.api.post(`/v1/namespace/${ok.slice(0, d).join('$')}/create`, {});
        assert.equal(r.status, 200, r.text);
      }
      await healthy();
    });

    it('JSON nested deeper than the contract ever needs: 400, not a stack overflow', async () => {
      // Written out by hand: JSON.stringify itself would overflow the test's stack.
      const n = 5000;
      const deep = '{"boolean":{"must":['.repeat(n) + '{"match":{"terms":"hello","column":"text"}}' + ']}}'.repeat(n);
      const r = await t.api.post('/v1/table/items/query', `{"k":1,"full_text_query":{"structured_query":{"query":${deep}}}}`);
      expectProblem(r, 400, 13, { msg: 'nested deeper than' });
      await healthy();
    });
  });

  describe('SQL the engine panics on', () => {
    for (const route of ['count_rows', 'update', 'delete'] as const) {
      it(`{"predicate":"$"} on ${route}: 400, table unchanged`, async () => {
        const before = await state();
        const body = route === 'update' ? { predicate: '$', updates: [['text', "'x'"]] } : { predicate: '$' };
        expectProblem(await t.api.post(`/v1/table/items/${route}`, body), 400, 13, { msg: /predicate: '\$'.*placeholder/ });
        assert.deepEqual(await state(), before);
        await healthy();
      });
    }

    it('{"filter":"${jndi:x}"} on query, and other placeholder forms: 400', async () => {
      expectProblem(await t.api.post('/v1/table/items/query', { filter: '${jndi:x}', k: 1 }), 400, 13, { msg: 'filter:' });
      expectProblem(await t.api.post('/v1/table/items/query', { filter: 'id = ?', k: 1 }), 400, 13, { msg: 'placeholder' });
      expectProblem(await t.api.post('/v1/table/items/query', { filter: "text = N'x'", k: 1 }), 400, 13, { msg: 'string literals' });
      expectProblem(await t.api.post('/v1/table/items/query', { columns: { a: '$1' }, k: 1 }), 400, 13, { msg: 'columns.a' });
      expectProblem(await t.api.post('/v1/table/items/explain_plan', { query: { filter: 'id > :x' } }), 400, 13, { msg: 'placeholder' });
      expectProblem(await t.api.get('/v1/table/items/count_rows?predicate=%24'), 400, 13);
      expectProblem(await t.api.post('/v1/table/items/update', { updates: [['text', '$$x$$']] }), 400, 13, {
        msg: 'updates[0] expression',
      });
      expectProblem(await t.api.post('/v1/table/items/add_columns', { new_columns: [{ name: 'z', expression: '?' }] }), 400, 13, {
        msg: 'new_columns[0].expression',
      });
      await healthy();
    });

    it("other bad SQL is the engine's own 400 (no 5xx), and good SQL still works", async () => {
      for (const filter of [
        'id >',
        'nope = 1',
        "id = 'abc'",
        'sum(id) > 1',
        'frobnicate(id)',
        'id IN (SELECT 1)',
        "regexp_like(text, '(')",
      ]) {
        expectProblem(await t.api.post('/v1/table/items/count_rows', { predicate: filter }), 400, 13, { what: filter });
      }
      const ok = await t.api.post('/v1/table/items/count_rows', { predicate: "text = '$' OR id < 3" });
      assert.equal(ok.status, 200, ok.text);
      assert.equal(Number(ok.body), 3);
      await healthy();
    });
  });

  describe('index parameters the engine cannot take', () => {
    it('IVF_PQ with num_partitions 1000000 on 50 rows: 400, no index', async () => {
      const r = await t.api.post('/v1/table/items/create_index', { column: 'vector', index_type: 'IVF_PQ', num_partitions: 1_000_000 });
      expectProblem(r, 400, 13, { msg: 'num_partitions (1000000) must not exceed the number of rows (50)' });
      for (const [param, v] of [
        ['num_partitions', 0],
        ['max_iterations', 0],
        ['num_partitions', 2 ** 32],
      ] as const) {
        expectProblem(await t.api.post('/v1/table/items/create_index', { column: 'vector', index_type: 'IVF_PQ', [param]: v }), 400, 13, {
          msg: param,
        });
      }
      // The engine's own "Unprocessable" is a 400 too (PQ needs 256 rows to train).
      expectProblem(
        await t.api.post('/v1/table/items/create_index', { column: 'vector', index_type: 'IVF_PQ', num_partitions: 2 }),
        400,
        13,
        {
          msg: 'Not enough rows',
        },
      );
      assert.deepEqual((await t.api.post('/v1/table/items/index/list', {})).body.indexes, []);
      await healthy();
    });

    it('an unknown FTS language (which aborts the engine) is a 400; the documented spelling in any case works', async () => {
      expectProblem(await t.api.post('/v1/table/items/create_index', { column: 'text', index_type: 'FTS', language: 'Klingon' }), 400, 13, {
        msg: "unsupported language 'Klingon'",
      });
      expectProblem(
        await t.api.post('/v1/table/items/create_index', { column: 'text', index_type: 'FTS', base_tokenizer: 'jieba/../../etc' }),
        400,
        13,
        {
          msg: 'base_tokenizer',
        },
      );
      await healthy();
      const fts = await t.api.post('/v1/table/items/create_index', { column: 'text', index_type: 'FTS', language: 'english' });
      assert.equal(fts.status, 200, fts.text);
      assert.deepEqual(
        (await t.api.post('/v1/table/items/index/list', {})).body.indexes.map((i: any) => i.index_type),
        ['FTS'],
      );
    });
  });

  it('records accepted data-plane writes in the audit trail, and refused ones not at all', async () => {
    const before = await state();
    const del = await t.api.post('/v1/table/items/delete', { predicate: 'id >= 1000' }, { 'x-request-id': `ok-delete-${kind}` });
    assert.equal(del.status, 200, del.text);
    const events = await auditEvents();
    const recorded = events.find((e) => e.request_id === `ok-delete-${kind}`);
    assert.ok(recorded, 'the delete is recorded');
    assert.equal(recorded.action, 'table.delete');
    assert.equal(recorded.target, 'items');
    assert.equal(recorded.details.predicate, 'id >= 1000');
    assert.equal(recorded.details.outcome, 'committed');
    assert.equal(recorded.details.version, del.body.version);
    assert.equal((await state()).rows, before.rows);
    // Refused before the engine (400), or by the engine itself (400): neither leaves a record.
    for (const [label, body] of [
      ['guard', { predicate: '$' }],
      ['engine', { predicate: 'nope = 1' }],
    ] as const) {
      expectProblem(await t.api.post('/v1/table/items/delete', body, { 'x-request-id': `bad-delete-${label}-${kind}` }), 400, 13);
    }
    const after = await auditEvents();
    assert.ok(!after.some((e) => String(e.request_id).startsWith('bad-delete-')), 'a failed delete left a record');
    assert.ok(!after.some((e) => e.details?.outcome === 'pending'), 'no record is left unconfirmed');
  });
});
