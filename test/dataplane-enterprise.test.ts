import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as lancedb from '@lancedb/lancedb';
import * as arrow from 'apache-arrow';
import { forEachCatalog, idPath, newTenant, operator, startGateway, Tenant, TestGateway } from './helpers/gateway';
import * as stored from './helpers/stored';

/**
 * Raw HTTP against the data plane: the extended edition's routes (`GET /v1/tables`, `POST /v1/tables/{name}` with a
 * streamed Arrow body), bad bodies, limits, tenant isolation, and the Lance Namespace spec's own request shapes.
 */
const ARROW = 'application/vnd.apache.arrow.stream';

function batchOf(from: number, n: number): arrow.Table {
  return new arrow.Table({
    id: arrow.vectorFromArray(Int32Array.from({ length: n }, (_, i) => from + i)),
    name: arrow.vectorFromArray(
      Array.from({ length: n }, (_, i) => `name-${from + i}`),
      new arrow.Utf8(),
    ),
  });
}

/** An Arrow IPC stream of `batches` record batches of `rows` rows each. */
function streamOf(batches: number, rows: number): Buffer {
  const list = Array.from({ length: batches }, (_, b) => batchOf(b * rows, rows).batches).flat();
  return Buffer.from(arrow.tableToIPC(new arrow.Table(list), 'stream'));
}

function vectorTable(from: number, n: number): arrow.Table {
  const vectors = Array.from({ length: n }, (_, i) => [from + i, (from + i) * 2, 1]);
  return arrow.tableFromArrays({ id: Int32Array.from({ length: n }, (_, i) => from + i) }).assign(
    new arrow.Table({
      vector: arrow.vectorFromArray(vectors, new arrow.FixedSizeList(3, new arrow.Field('item', new arrow.Float32(), true))),
      text: arrow.vectorFromArray(
        Array.from({ length: n }, (_, i) => ((from + i) % 2 ? 'red apple' : 'green pear')),
        new arrow.Utf8(),
      ),
    }),
  );
}

async function post(gw: TestGateway, t: Tenant, p: string, body: Buffer | string | undefined, contentType = ARROW, key = t.writeKey) {
  const res = await fetch(gw.url + p, {
    method: 'POST',
    headers: { 'x-api-key': key, 'x-service-database': t.name, ...(contentType ? { 'content-type': contentType } : {}) },
    body,
  });
  const buf = Buffer.from(await res.arrayBuffer());
  let json: any;
  try {
    json = JSON.parse(buf.toString('utf8'));
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, json, buf };
}

/** The table folders in a database's folder (names of the prefixes holding objects, on an object store). */
function folders(gw: TestGateway, t: Tenant): Promise<string[]> {
  return stored.entries(stored.dbFolder(gw, t.name));
}

forEachCatalog('data plane over raw HTTP', (kind) => {
  let gw: TestGateway;
  let tenant: Tenant;

  before(async () => {
    gw = await startGateway(kind);
    tenant = await newTenant(gw);
  });
  after(async () => {
    await gw.close();
  });

  describe('extended edition routes', () => {
    it('POST /v1/tables/{name} creates a table from a multi-batch stream; GET /v1/tables lists it, paginated', async () => {
      const r = await post(gw, tenant, '/v1/tables/events', streamOf(5, 1000));
      assert.equal(r.status, 201, r.buf.toString());
      assert.equal(r.json.num_rows, 5000);
      assert.equal(r.json.name, 'events');
      assert.ok(r.json.version >= 1);
      assert.ok(r.headers.get('phalanx-version'));
      await post(gw, tenant, '/v1/tables/logs', streamOf(1, 10));
      // Creating a table is in the audit trail, like every other catalog change.
      const audit = await operator(gw).get(`/admin/v1/databases/${tenant.name}/audit`);
      const created = audit.body.events.find(
        (e: { action: string; target: string }) => e.action === 'table.create' && e.target === 'events',
      );
      assert.ok(created, JSON.stringify(audit.body));
      assert.equal(created.details.version, r.json.version);
      assert.match(created.actor, /^key:/);

      const list = await tenant.api.get('/v1/tables');
      assert.equal(list.status, 200);
      assert.deepEqual(list.body.tables, ['events', 'logs']);
      const page = await tenant.api.get('/v1/tables?limit=1');
      assert.deepEqual(page.body.tables, ['events']);
      assert.ok(page.body.page_token);
      const next = await tenant.api.get(`/v1/tables?limit=1&page_token=${page.body.page_token}`);
      assert.deepEqual(next.body.tables, ['logs']);
      assert.equal(next.body.page_token, undefined);

      // The whole table as one streamed Arrow file (many engine batches), as the remote client asks for it.
      const all = await fetch(`${gw.url}/v1/table/events/query`, {
        method: 'POST',
        headers: { ...tenant.api.headers, 'content-type': 'application/json' },
        body: '{"vector":[],"k":9223372036854775807,"version":null,"prefilter":true}',
      });
      assert.equal(all.status, 200);
      assert.equal(all.headers.get('x-lancedb-version'), String(r.json.version));
      const whole = arrow.tableFromIPC(new Uint8Array(await all.arrayBuffer()));
      assert.equal(whole.numRows, 5000);
      assert.ok(whole.batches.length > 1, `several batches (${whole.batches.length})`);
      assert.deepEqual(
        Array.from(whole.getChild('id')!.toArray() as Int32Array)
          .sort((a, b) => a - b)
          .slice(0, 3),
        [0, 1, 2],
      );

      const count = await tenant.api.post('/v1/table/events/count_rows', { predicate: 'id < 10' });
      assert.equal(count.status, 200);
      assert.equal(count.text, '10');
    });

    it('streams a body sent in many small chunks, with back-pressure', async () => {
      const data = streamOf(20, 500);
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          for (let off = 0; off < data.length; off += 4096) controller.enqueue(data.subarray(off, off + 4096));
          controller.close();
        },
      });
      const res = await fetch(`${gw.url}/v1/tables/chunked`, {
        method: 'POST',
        headers: { 'x-api-key': tenant.writeKey, 'x-service-database': tenant.name, 'content-type': ARROW },
        body,
        duplex: 'half',
      } as RequestInit);
      assert.equal(res.status, 201, await res.clone().text());
      assert.equal(((await res.json()) as { num_rows: number }).num_rows, 10000);
    });

    it('answers 409 for an existing name and leaves the existing table alone', async () => {
      await post(gw, tenant, '/v1/tables/taken', streamOf(1, 3));
      const before = await folders(gw, tenant);
      const r = await post(gw, tenant, '/v1/tables/taken', streamOf(1, 7));
      assert.equal(r.status, 409);
      assert.equal(r.json.code, 5);
      assert.deepEqual(await folders(gw, tenant), before, 'no folder left behind');
      assert.equal((await tenant.api.post('/v1/table/taken/count_rows', {})).text, '3');
    });

    it('creates an empty table from a schema-only stream', async () => {
      const empty = arrow.tableFromArrays({ id: new Int32Array(0) });
      const r = await post(gw, tenant, '/v1/tables/schema_only', Buffer.from(arrow.tableToIPC(empty, 'stream')));
      assert.equal(r.status, 201, r.buf.toString());
      assert.equal(r.json.num_rows, 0);
      const d = await tenant.api.post('/v1/table/schema_only/describe', {});
      assert.deepEqual(
        d.body.schema.fields.map((f: any) => [f.name, f.type.type]),
        [['id', 'int32']],
      );
    });

    it('rejects bad, truncated, empty and schema-less bodies with 400 and registers nothing', async () => {
      const before = await folders(gw, tenant);
      const full = streamOf(3, 1000);
      const cases: Array<[string, Buffer | string | undefined]> = [
        ['garbage', Buffer.from('this is not arrow at all, not even close')],
        ['truncated', full.subarray(0, Math.floor(full.length * 0.7))],
        ['truncated-header', full.subarray(0, 6)],
        ['empty', Buffer.alloc(0)],
        ['no-fields', Buffer.from(arrow.tableToIPC(new arrow.Table(new arrow.Schema([])), 'stream'))],
      ];
      for (const [name, body] of cases) {
        const r = await post(gw, tenant, `/v1/tables/bad_${name.replace(/-/g, '_')}`, body);
        assert.equal(r.status, 400, `${name}: ${r.status} ${r.buf.toString()}`);
        assert.equal(r.json.code, 13, name);
      }
      const listed = (await tenant.api.get('/v1/tables')).body.tables as string[];
      assert.ok(
        listed.every((n) => !n.startsWith('bad_')),
        `nothing registered: ${listed}`,
      );
      assert.deepEqual(await folders(gw, tenant), before, 'no folder left behind');
    });

    it('accepts an Arrow body without a Content-Type', async () => {
      const r = await post(gw, tenant, '/v1/tables/no_content_type', streamOf(2, 5), '');
      assert.equal(r.status, 201, r.buf.toString());
      assert.equal(r.json.num_rows, 10);
    });

    it('rejects a JSON body (415), a read key (403) and a bad table name (400)', async () => {
      assert.equal((await post(gw, tenant, '/v1/tables/json', '{"a":1}', 'application/json')).status, 415);
      assert.equal((await post(gw, tenant, '/v1/tables/ro', streamOf(1, 1), ARROW, tenant.readKey)).status, 403);
      assert.equal((await post(gw, tenant, '/v1/tables/bad%20name', streamOf(1, 1))).status, 400);
    });

    it('concurrent creators of one name: exactly one wins, the others get 409 and leave nothing behind', async () => {
      const before = (await folders(gw, tenant)).length;
      const answers = await Promise.all(
        Array.from({ length: 4 }, (_, i) => post(gw, tenant, '/v1/tables/race', streamOf(2, 100 * (i + 1)))),
      );
      const statuses = answers.map((a) => a.status).sort();
      assert.deepEqual(statuses, [201, 409, 409, 409]);
      assert.equal((await folders(gw, tenant)).length, before + 1);
      const winner = answers.find((a) => a.status === 201)!;
      assert.equal((await tenant.api.post('/v1/table/race/count_rows', {})).text, String(winner.json.num_rows));
    });

    it('concurrent inserts into one table all commit, once each', async () => {
      await post(gw, tenant, '/v1/tables/busy', streamOf(1, 10));
      const answers = await Promise.all(Array.from({ length: 6 }, () => post(gw, tenant, '/v1/table/busy/insert', streamOf(1, 10))));
      assert.deepEqual(
        answers.map((a) => a.status),
        [200, 200, 200, 200, 200, 200],
      );
      const versions = answers.map((a) => a.json.version);
      assert.equal(new Set(versions).size, 6, `distinct versions ${versions}`);
      assert.equal((await tenant.api.post('/v1/table/busy/count_rows', {})).text, '70');
    });

    it('keeps tenants apart', async () => {
      const other = await newTenant(gw);
      await post(gw, other, '/v1/tables/theirs', streamOf(1, 5));
      assert.deepEqual((await other.api.get('/v1/tables')).body.tables, ['theirs']);
      assert.ok(!((await tenant.api.get('/v1/tables')).body.tables as string[]).includes('theirs'));
      const q = await tenant.api.post('/v1/table/theirs/query', { vector: [], k: 10 });
      assert.equal(q.status, 404);
      assert.equal(q.body.code, 4);
      // Another database's name with this tenant's key.
      const cross = await fetch(`${gw.url}/v1/table/theirs/count_rows`, {
        method: 'POST',
        headers: { 'x-api-key': tenant.writeKey, 'x-service-database': other.name, 'content-type': 'application/json' },
        body: '{}',
      });
      assert.equal(cross.status, 403);
      const remote = await lancedb.connect(`db://${other.name}`, { apiKey: tenant.writeKey, hostOverride: gw.url });
      await assert.rejects(remote.openTable('theirs'), /403/);
      remote.close();
    });
  });

  describe('Lance Namespace spec shapes', () => {
    it('create (409 code 5 on an existing name), insert, count_rows, query, merge_insert, update, delete', async () => {
      assert.equal((await tenant.api.post(`/v1/namespace/${idPath('spec')}/create`, {})).status, 200);
      const tid = idPath('spec', 'vecs');
      const created = await post(
        gw,
        tenant,
        `/v1/table/${tid}/create?mode=Create&properties=${encodeURIComponent('{"owner":"me"}')}`,
        Buffer.from(arrow.tableToIPC(vectorTable(0, 10), 'stream')),
      );
      assert.equal(created.status, 200, created.buf.toString());
      assert.equal(created.json.version, 1);
      assert.deepEqual(created.json.properties, { owner: 'me' });
      const again = await post(
        gw,
        tenant,
        `/v1/table/${tid}/create?mode=Create`,
        Buffer.from(arrow.tableToIPC(vectorTable(0, 1), 'stream')),
      );
      assert.equal(again.status, 409);
      assert.equal(again.json.code, 5);
      const existOk = await post(
        gw,
        tenant,
        `/v1/table/${tid}/create?mode=ExistOk`,
        Buffer.from(arrow.tableToIPC(vectorTable(0, 1), 'stream')),
      );
      assert.equal(existOk.status, 200);
      assert.deepEqual(existOk.json.properties, { owner: 'me' });

      const ins = await post(
        gw,
        tenant,
        `/v1/table/${tid}/insert?mode=append`,
        Buffer.from(arrow.tableToIPC(vectorTable(10, 5), 'stream')),
      );
      assert.equal(ins.status, 200, ins.buf.toString());
      assert.equal(ins.json.num_inserted_rows, 5);
      assert.equal(ins.json.version, 2);

      const count = await tenant.api.post(`/v1/table/${tid}/count_rows`, { predicate: 'id >= 12' });
      assert.equal(count.text, '3');
      assert.equal(count.headers.get('x-lancedb-version'), '2');
      assert.equal((await tenant.api.get(`/v1/table/${tid}/count_rows`)).text, '15');

      const q = await tenant.api.request('POST', `/v1/table/${tid}/query`, {
        vector: { single_vector: [7, 14, 1] },
        k: 2,
        columns: { column_names: ['id'] },
        filter: 'id > 0',
        distance_type: 'l2',
      });
      assert.equal(q.status, 200);
      const raw = await fetch(`${gw.url}/v1/table/${tid}/query`, {
        method: 'POST',
        headers: { ...tenant.api.headers, 'content-type': 'application/json' },
        body: JSON.stringify({ vector: { single_vector: [7, 14, 1] }, k: 2, columns: { column_names: ['id'] }, filter: 'id > 0' }),
      });
      assert.equal(raw.headers.get('content-type'), 'application/vnd.apache.arrow.file');
      const result = arrow.tableFromIPC(new Uint8Array(await raw.arrayBuffer()));
      assert.equal(result.numRows, 2);
      assert.equal(result.getChild('id')!.get(0), 7);
      assert.deepEqual(result.schema.fields.map((f) => f.name).sort(), ['_distance', 'id']);

      const merged = await post(
        gw,
        tenant,
        `/v1/table/${tid}/merge_insert?on=id&when_matched_update_all=true&when_not_matched_insert_all=true`,
        Buffer.from(arrow.tableToIPC(vectorTable(13, 4), 'stream')),
      );
      assert.equal(merged.status, 200, merged.buf.toString());
      assert.deepEqual([merged.json.num_updated_rows, merged.json.num_inserted_rows, merged.json.num_deleted_rows], [2, 2, 0]);
      assert.equal((await tenant.api.post(`/v1/table/${tid}/count_rows`, {})).text, '17');

      const upd = await tenant.api.post(`/v1/table/${tid}/update`, { updates: [['text', "'changed'"]], predicate: 'id < 3' });
      assert.equal(upd.status, 200);
      assert.equal(upd.body.updated_rows, 3);
      assert.equal((await tenant.api.post(`/v1/table/${tid}/count_rows`, { predicate: "text = 'changed'" })).text, '3');
      const del = await tenant.api.post(`/v1/table/${tid}/delete`, { predicate: 'id >= 15' });
      assert.equal(del.status, 200);
      assert.equal((await tenant.api.post(`/v1/table/${tid}/count_rows`, {})).text, '15');

      assert.equal((await tenant.api.post(`/v1/table/${tid}/delete`, { predicate: '  ' })).status, 400);
      assert.equal((await tenant.api.post(`/v1/table/${tid}/update`, { updates: [['id']] })).status, 400);
      assert.equal((await tenant.api.post(`/v1/table/${tid}/query`, { vector: [], k: 1, filter: 'nope >' })).status, 400);
    });

    it('merge_insert on a composite key (repeated on), with delete of rows missing from the source', async () => {
      const tid = idPath('spec', 'composite');
      const mk = (rows: Array<[string, number, string]>) =>
        Buffer.from(
          arrow.tableToIPC(
            new arrow.Table({
              region: arrow.vectorFromArray(
                rows.map((r) => r[0]),
                new arrow.Utf8(),
              ),
              id: arrow.vectorFromArray(Int32Array.from(rows.map((r) => r[1]))),
              v: arrow.vectorFromArray(
                rows.map((r) => r[2]),
                new arrow.Utf8(),
              ),
            }),
            'stream',
          ),
        );
      await post(
        gw,
        tenant,
        `/v1/table/${tid}/create`,
        mk([
          ['eu', 1, 'a'],
          ['us', 1, 'b'],
          ['eu', 2, 'c'],
        ]),
      );
      const r = await post(
        gw,
        tenant,
        `/v1/table/${tid}/merge_insert?on=region&on=id&when_matched_update_all=true&when_not_matched_insert_all=true&when_not_matched_by_source_delete=true`,
        mk([
          ['eu', 1, 'A'],
          ['us', 2, 'D'],
        ]),
      );
      assert.equal(r.status, 200, r.buf.toString());
      assert.deepEqual([r.json.num_updated_rows, r.json.num_inserted_rows, r.json.num_deleted_rows], [1, 1, 2]);
      assert.equal((await tenant.api.post(`/v1/table/${tid}/count_rows`, { predicate: "v IN ('A', 'D')" })).text, '2');
      assert.equal((await post(gw, tenant, `/v1/table/${tid}/merge_insert`, mk([['eu', 9, 'x']]))).status, 400, 'on is required');
    });

    it('writes the first version of a declared-only table at its declared location', async () => {
      const a = idPath('spec', 'declared_a');
      const b = idPath('spec', 'declared_b');
      const da = await tenant.api.post(`/v1/table/${a}/declare`, {});
      assert.equal(da.status, 200);
      await tenant.api.post(`/v1/table/${b}/declare`, {});
      const created = await post(gw, tenant, `/v1/table/${a}/create`, Buffer.from(arrow.tableToIPC(vectorTable(0, 3), 'stream')));
      assert.equal(created.status, 200, created.buf.toString());
      assert.equal(created.json.location, da.body.location);
      const inserted = await post(gw, tenant, `/v1/table/${b}/insert`, Buffer.from(arrow.tableToIPC(vectorTable(0, 4), 'stream')));
      assert.equal(inserted.status, 200, inserted.buf.toString());
      assert.equal((await tenant.api.post(`/v1/table/${a}/count_rows`, {})).text, '3');
      assert.equal((await tenant.api.post(`/v1/table/${b}/count_rows`, {})).text, '4');
      const d = await tenant.api.post(`/v1/table/${b}/describe`, { check_declared: true });
      assert.equal(d.body.is_only_declared, false);
      assert.equal(d.body.version, 1);
    });

    it('full-text search with string_query and structured_query, index list and explain_plan', async () => {
      const tid = idPath('spec', 'fts');
      await post(gw, tenant, `/v1/table/${tid}/create`, Buffer.from(arrow.tableToIPC(vectorTable(0, 20), 'stream')));
      const ci = await tenant.api.post(`/v1/table/${tid}/create_index`, { column: 'text', index_type: 'FTS' });
      assert.equal(ci.status, 200, ci.text);
      const bad = await tenant.api.post(`/v1/table/${tid}/create_index`, { column: 'text', index_type: 'MAGIC' });
      assert.equal(bad.status, 400);
      const missing = await tenant.api.post(`/v1/table/${tid}/create_index`, { column: 'nope', index_type: 'BTREE' });
      assert.equal(missing.status, 404);
      assert.equal(missing.body.code, 12);
      const list = await tenant.api.post(`/v1/table/${tid}/index/list`, {});
      assert.deepEqual(
        list.body.indexes.map((i: any) => [i.index_name, i.columns, i.index_type]),
        [['text_idx', ['text'], 'FTS']],
      );

      for (const fts of [
        { string_query: { query: 'apple', columns: ['text'] } },
        { structured_query: { query: { match: { terms: 'apple', column: 'text' } } } },
      ]) {
        const res = await fetch(`${gw.url}/v1/table/${tid}/query`, {
          method: 'POST',
          headers: { ...tenant.api.headers, 'content-type': 'application/json' },
          body: JSON.stringify({ vector: null, k: 100, full_text_query: fts, columns: { column_names: ['id', 'text'] } }),
        });
        assert.equal(res.status, 200, await res.clone().text());
        const t = arrow.tableFromIPC(new Uint8Array(await res.arrayBuffer()));
        assert.equal(t.numRows, 10);
        assert.ok(
          t
            .getChild('text')!
            .toArray()
            .every((s: string) => s === 'red apple'),
        );
      }
      const plan = await tenant.api.post(`/v1/table/${tid}/explain_plan`, {
        query: { vector: [], k: 5, filter: 'id > 3' },
        verbose: false,
      });
      assert.equal(plan.status, 200);
      assert.equal(typeof plan.body, 'string');
    });
  });

  describe('limits', () => {
    let small: TestGateway;
    let t: Tenant;
    before(async () => {
      small = await startGateway(kind, {
        ARROW_STREAM_LIMIT_BYTES: String(256 * 1024),
        ARROW_BUFFERED_LIMIT_BYTES: String(64 * 1024),
        ARROW_INGEST_CHUNK_BYTES: String(16 * 1024),
      });
      t = await newTenant(small);
    });
    after(async () => {
      await small.close();
    });

    it('writes a streamed upload in chunks, answers 413 above the limit and keeps nothing of it', async () => {
      const ok = await post(small, t, '/v1/tables/chunks', streamOf(10, 1000));
      assert.equal(ok.status, 201, ok.buf.toString());
      assert.equal(ok.json.num_rows, 10000);
      assert.ok(ok.json.version > 1, `written in several chunks (version ${ok.json.version})`);
      const before = await folders(small, t);
      const big = await post(small, t, '/v1/tables/too_big', streamOf(40, 1000));
      assert.equal(big.status, 413);
      assert.deepEqual(await folders(small, t), before);
      assert.deepEqual((await t.api.get('/v1/tables')).body.tables, ['chunks']);
      const ins = await post(small, t, '/v1/table/chunks/insert', streamOf(10, 1000));
      assert.equal(ins.status, 413);
      assert.equal((await t.api.post('/v1/table/chunks/count_rows', {})).text, '10000', 'nothing committed');
    });
  });
});

forEachCatalog('remote mode and namespace mode see the same tables', (kind) => {
  let gw: TestGateway;
  let tenant: Tenant;
  before(async () => {
    gw = await startGateway(kind);
    tenant = await newTenant(gw);
  });
  after(async () => {
    await gw.close();
  });

  it('a table written through remote mode is read through namespace mode, and vice versa', async () => {
    const remote = await lancedb.connect(`db://${tenant.name}`, { apiKey: tenant.writeKey, hostOverride: gw.url });
    const ns = await lancedb.connectNamespace('rest', {
      uri: gw.url,
      headers: { 'x-api-key': tenant.writeKey, 'x-service-database': tenant.name },
    });
    try {
      const data = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ id: from + i, vector: [from + i, 1] }));
      await remote.createTable('from_remote', data(0, 5));
      const seen = await ns.openTable('from_remote');
      assert.equal(await seen.countRows(), 5);
      await seen.add(data(5, 3));
      const back = await remote.openTable('from_remote');
      assert.equal(await back.countRows(), 8);

      const local = await ns.createTable('from_namespace', data(0, 4));
      assert.equal(await local.countRows(), 4);
      const viaRemote = await remote.openTable('from_namespace');
      assert.equal(await viaRemote.countRows(), 4);
      await viaRemote.add(data(10, 2));
      const nearest = await viaRemote.vectorSearch([11, 1]).limit(1).toArray();
      assert.equal(Number(nearest[0].id), 11);
      await local.checkoutLatest();
      assert.equal(await local.countRows(), 6);
    } finally {
      remote.close();
      ns.close();
    }
  });
});
