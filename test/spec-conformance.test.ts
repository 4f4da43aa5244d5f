import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as lancedb from '@lancedb/lancedb';
import * as arrow from 'apache-arrow';
import { expectProblem } from './helpers/assertions';
import { forEachCatalog, idPath, newTenant, Reply, startGateway, Tenant, TestGateway } from './helpers/gateway';
import { branchAndAdd } from './helpers/lance';
import * as stored from './helpers/stored';
import { NAMESPACE_READS } from './helpers/namespace-types';

/**
 * Defects found against the Lance Namespace spec and the reference implementation's own tests (issue 13), each
 * checked over raw HTTP and, where the official client reads the answer, with the unmodified @lancedb/lancedb client:
 * the spelling of Arrow types in describe's schema (per client), ListTableVersions (order, paging, manifest paths),
 * DescribeTableVersion, `branch` on every data operation (a branch is honoured or a 404, never main's data),
 * register's `location`, and a schema the engine refuses (400 code 20, not a 500).
 */

const ARROW = 'application/vnd.apache.arrow.stream';

const f = (name: string, type: arrow.DataType, nullable = true) => new arrow.Field(name, type, nullable);

/** A table of many column types, as an Arrow IPC stream. */
function typedRows(from: number, n: number): Buffer {
  const ids = Array.from({ length: n }, (_, i) => from + i);
  const cols: Record<string, arrow.Vector> = {
    id: arrow.vectorFromArray(ids.map(BigInt), new arrow.Int64()),
    name: arrow.vectorFromArray(
      ids.map((i) => `row-${i}`),
      new arrow.Utf8(),
    ),
    big_text: arrow.vectorFromArray(
      ids.map((i) => `long-${i}`),
      new arrow.LargeUtf8(),
    ),
    small: arrow.vectorFromArray(
      ids.map((i) => i % 100),
      new arrow.Int8(),
    ),
    count: arrow.vectorFromArray(
      ids.map((i) => i),
      new arrow.Uint32(),
    ),
    score: arrow.vectorFromArray(
      ids.map((i) => i / 2),
      new arrow.Float32(),
    ),
    precise: arrow.vectorFromArray(
      ids.map((i) => i / 3),
      new arrow.Float64(),
    ),
    flag: arrow.vectorFromArray(
      ids.map((i) => i % 2 === 0),
      new arrow.Bool(),
    ),
    raw: arrow.vectorFromArray(
      ids.map((i) => Uint8Array.of(i % 256)),
      new arrow.Binary(),
    ),
    day: arrow.vectorFromArray(
      ids.map((i) => new Date(Date.UTC(2024, 0, 1 + i))),
      new arrow.DateDay(),
    ),
    at: arrow.vectorFromArray(
      ids.map((i) => Date.UTC(2024, 0, 1) + i * 1000),
      new arrow.TimestampMillisecond('UTC'),
    ),
    vector: arrow.vectorFromArray(
      ids.map((i) => [i, i * 2, 1, 0.5]),
      new arrow.FixedSizeList(4, f('item', new arrow.Float32())),
    ),
    tags: arrow.vectorFromArray(
      ids.map((i) => [`t${i}`, 'x']),
      new arrow.List(f('item', new arrow.Utf8())),
    ),
    point: arrow.vectorFromArray(
      ids.map((i) => ({ x: i, label: `p${i}` })),
      new arrow.Struct([f('x', new arrow.Int32()), f('label', new arrow.Utf8())]),
    ),
  };
  return Buffer.from(arrow.tableToIPC(new arrow.Table(cols), 'stream'));
}

/** Rows `{id, name}` as an Arrow IPC stream. */
function plainRows(from: number, n: number): Buffer {
  const ids = Array.from({ length: n }, (_, i) => from + i);
  return Buffer.from(
    arrow.tableToIPC(
      new arrow.Table({
        id: arrow.vectorFromArray(ids.map(BigInt), new arrow.Int64()),
        name: arrow.vectorFromArray(
          ids.map((i) => `n${i}`),
          new arrow.Utf8(),
        ),
      }),
      'stream',
    ),
  );
}

async function postArrow(gw: TestGateway, t: Tenant, p: string, body: Buffer): Promise<Reply> {
  const res = await fetch(gw.url + p, { method: 'POST', headers: { ...t.api.headers, 'content-type': ARROW }, body });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = text;
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}

/** The rows a query answers (an Arrow IPC file), by id. */
async function queryIds(gw: TestGateway, t: Tenant, table: string, body: Record<string, unknown>): Promise<number[]> {
  const res = await fetch(`${gw.url}/v1/table/${idPath(table)}/query`, {
    method: 'POST',
    headers: { ...t.api.headers, 'content-type': 'application/json' },
    body: JSON.stringify({ k: 1000, ...body }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  const tbl = arrow.tableFromIPC(new Uint8Array(await res.arrayBuffer()));
  return Array.from(tbl.getChild('id')!.toArray() as BigInt64Array, Number).sort((a, b) => a - b);
}

function expectOk(r: Reply): void {
  assert.equal(r.status, 200, `expected 200, got ${r.status}: ${r.text}`);
}

forEachCatalog('spec conformance: schema spelling, versions, branches, register, refused schemas', (kind) => {
  let gw: TestGateway;
  let t: Tenant;
  let remote: lancedb.Connection;
  let seq = 0;
  const fresh = (prefix: string) => `${prefix}_${++seq}`;

  before(async () => {
    gw = await startGateway(kind);
    t = await newTenant(gw);
    remote = await lancedb.connect(`db://${t.name}`, { apiKey: t.writeKey, hostOverride: gw.url });
  });
  after(async () => {
    remote?.close();
    await gw?.close();
  });

  /** A table of `plainRows` with versions 1 (rows 0..2), 2 (+3..4) and 3 (+5), and its location. */
  async function threeVersions(name: string): Promise<string> {
    expectOk(await postArrow(gw, t, `/v1/table/${idPath(name)}/create`, plainRows(0, 3)));
    expectOk(await postArrow(gw, t, `/v1/table/${idPath(name)}/insert`, plainRows(3, 2)));
    expectOk(await postArrow(gw, t, `/v1/table/${idPath(name)}/insert`, plainRows(5, 1)));
    return (await t.api.post(`/v1/table/${idPath(name)}/describe`, {})).body.location as string;
  }

  describe("describe's schema: each client reads its own spelling of Arrow types", () => {
    it("namespace clients get the Lance Namespace names, the remote client Lance's own, and both read their answer", async () => {
      const name = fresh('typed');
      expectOk(await postArrow(gw, t, `/v1/table/${idPath(name)}/create`, typedRows(0, 5)));

      // A namespace client (no remote-client marks): `utf8`, `float32`, … as the namespace converters read them.
      const spec = await t.api.post(`/v1/table/${idPath(name)}/describe`, {});
      expectOk(spec);
      const types = Object.fromEntries(spec.body.schema.fields.map((x: any) => [x.name, x.type]));
      assert.deepEqual(types, {
        id: { type: 'int64' },
        name: { type: 'utf8' },
        big_text: { type: 'large_utf8' },
        small: { type: 'int8' },
        count: { type: 'uint32' },
        score: { type: 'float32' },
        precise: { type: 'float64' },
        flag: { type: 'bool' },
        raw: { type: 'binary' },
        day: { type: 'date32' },
        at: { type: 'timestamp' },
        vector: { type: 'fixed_size_list', length: 4, fields: [{ name: 'item', type: { type: 'float32' }, nullable: true }] },
        tags: { type: 'list', fields: [{ name: 'item', type: { type: 'utf8' }, nullable: true }] },
        point: {
          type: 'struct',
          fields: [
            { name: 'x', type: { type: 'int32' }, nullable: true },
            { name: 'label', type: { type: 'utf8' }, nullable: true },
          ],
        },
      });
      const names: string[] = [];
      const walk = (fields: any[]) => fields.forEach((x) => (names.push(x.type.type), walk(x.type.fields ?? [])));
      walk(spec.body.schema.fields);
      for (const n of names) assert.ok(NAMESPACE_READS.has(n), `the namespace converters read '${n}'`);

      // The remote client's dialect (its database header): Lance's names, which `lance::arrow::json` reads.
      const lance = await t.api.post(`/v1/table/${idPath(name)}/describe`, {}, { 'x-lancedb-database': t.name });
      expectOk(lance);
      const lt = Object.fromEntries(lance.body.schema.fields.map((x: any) => [x.name, x.type.type]));
      assert.equal(lt.name, 'string');
      assert.equal(lt.big_text, 'large_string');
      assert.equal(lt.score, 'float');
      assert.equal(lt.precise, 'double');
      assert.equal(lt.day, 'date32:day');
      assert.equal(lt.at, 'timestamp:ms:UTC');
      // …and so does its user agent alone.
      const byAgent = await t.api.post(`/v1/table/${idPath(name)}/describe`, {}, { 'user-agent': 'LanceDB-Python-Client/0.25.0' });
      assert.equal(byAgent.body.schema.fields[1].type.type, 'string');

      // The official remote client opens the table from describe and reads every type back.
      const table = await remote.openTable(name);
      const schema = await table.schema();
      const byName = Object.fromEntries(schema.fields.map((x) => [x.name, x.type]));
      assert.ok(arrow.DataType.isUtf8(byName.name));
      assert.ok(arrow.DataType.isLargeUtf8(byName.big_text));
      assert.ok(arrow.DataType.isFloat(byName.score) && (byName.score as arrow.Float).precision === arrow.Precision.SINGLE);
      assert.ok(arrow.DataType.isTimestamp(byName.at) && (byName.at as arrow.Timestamp).timezone === 'UTC');
      assert.ok(arrow.DataType.isFixedSizeList(byName.vector) && (byName.vector as arrow.FixedSizeList).listSize === 4);
      assert.ok(arrow.DataType.isStruct(byName.point));
      assert.equal(await table.countRows(), 5);
      table.close();
    });

    it('alter_columns reads a new data type in either spelling', async () => {
      const name = fresh('cast');
      expectOk(await postArrow(gw, t, `/v1/table/${idPath(name)}/create`, typedRows(0, 3)));
      const alter = (path: string, type: string) =>
        t.api.post(`/v1/table/${idPath(name)}/alter_columns`, { alterations: [{ path, data_type: { type } }] });
      const typeOf = async (column: string) =>
        (await t.api.post(`/v1/table/${idPath(name)}/describe`, {})).body.schema.fields.find((x: any) => x.name === column).type;
      expectOk(await alter('precise', 'float32')); // a namespace client's name
      assert.deepEqual(await typeOf('precise'), { type: 'float32' });
      expectOk(await alter('precise', 'halffloat')); // Lance's name
      assert.deepEqual(await typeOf('precise'), { type: 'float16' });
      expectProblem(await alter('precise', 'float64x'), 400, 13, { msg: 'float64x' });
      // The official remote client sends Lance's spelling.
      const table = await remote.openTable(name);
      await table.alterColumns([{ path: 'score', dataType: new arrow.Float16() }]);
      assert.deepEqual(await typeOf('score'), { type: 'float16' });
      table.close();
    });
  });

  describe('ListTableVersions', () => {
    it("names each version's manifest, honours descending, limit and page_token", async () => {
      const name = fresh('versions');
      const location = await threeVersions(name);
      const list = await t.api.post(`/v1/table/${idPath(name)}/version/list`);
      expectOk(list);
      assert.deepEqual(
        list.body.versions.map((v: any) => v.version),
        [1, 2, 3],
      );
      assert.equal(list.body.page_token, undefined);
      for (const v of list.body.versions) {
        assert.equal(typeof v.manifest_path, 'string');
        assert.ok(!v.manifest_path.startsWith('/'), 'an object-store path: no leading separator');
        assert.ok(v.manifest_path.startsWith(stored.objectPath(location) + '/_versions/'), v.manifest_path);
        assert.match(v.manifest_path, /\.manifest$/);
        assert.equal(v.manifest_size, await stored.manifestSize(gw.config.storageRoot, v.manifest_path));
        assert.equal(typeof v.timestamp_millis, 'number');
        assert.equal(new Date(v.timestamp).getTime(), v.timestamp_millis);
        assert.equal(typeof v.metadata, 'object');
      }
      assert.equal(new Set(list.body.versions.map((v: any) => v.manifest_path)).size, 3);

      const desc = await t.api.post(`/v1/table/${idPath(name)}/version/list?descending=true`);
      assert.deepEqual(
        desc.body.versions.map((v: any) => v.version),
        [3, 2, 1],
      );
      assert.deepEqual(desc.body.versions[0], list.body.versions[2]);
      const asc = await t.api.post(`/v1/table/${idPath(name)}/version/list?descending=false`);
      assert.deepEqual(
        asc.body.versions.map((v: any) => v.version),
        [1, 2, 3],
      );

      // Paging, both ways: `limit` cuts, `page_token` continues after the last one answered.
      const p1 = await t.api.post(`/v1/table/${idPath(name)}/version/list?descending=true&limit=2`);
      assert.deepEqual(
        p1.body.versions.map((v: any) => v.version),
        [3, 2],
      );
      assert.ok(p1.body.page_token);
      const p2 = await t.api.post(`/v1/table/${idPath(name)}/version/list?descending=true&limit=2&page_token=${p1.body.page_token}`);
      assert.deepEqual(
        p2.body.versions.map((v: any) => v.version),
        [1],
      );
      assert.equal(p2.body.page_token, undefined);
      const a1 = await t.api.post(`/v1/table/${idPath(name)}/version/list?limit=1`);
      assert.deepEqual(
        a1.body.versions.map((v: any) => v.version),
        [1],
      );
      const a2 = await t.api.post(`/v1/table/${idPath(name)}/version/list?limit=5&page_token=${a1.body.page_token}`);
      assert.deepEqual(
        a2.body.versions.map((v: any) => v.version),
        [2, 3],
      );
      // The latest version, as Lance's namespace-backed commit handler asks for it.
      const latest = await t.api.post(`/v1/table/${idPath(name)}/version/list?descending=true&limit=1`);
      assert.deepEqual(
        latest.body.versions.map((v: any) => v.version),
        [3],
      );
      expectProblem(await t.api.post(`/v1/table/${idPath(name)}/version/list?page_token=nope`), 400, 13);
      expectProblem(await t.api.post(`/v1/table/${idPath(name)}/version/list?descending=maybe`), 400, 13);

      // The official remote client still reads the list.
      const table = await remote.openTable(name);
      assert.deepEqual(
        (await table.listVersions()).map((v) => v.version),
        [1, 2, 3],
      );
      table.close();
    });

    it('DescribeTableVersion answers one version, the latest by default; an unknown one is 404 code 11', async () => {
      const name = fresh('describe_version');
      await threeVersions(name);
      const list = (await t.api.post(`/v1/table/${idPath(name)}/version/list`)).body.versions;
      const two = await t.api.post(`/v1/table/${idPath(name)}/version/describe`, { version: 2 });
      expectOk(two);
      assert.deepEqual(two.body, { version: list[1] });
      const latest = await t.api.post(`/v1/table/${idPath(name)}/version/describe`, {});
      assert.deepEqual(latest.body, { version: list[2] });
      const main = await t.api.post(`/v1/table/${idPath(name)}/version/describe`, { version: 1, branch: 'main' });
      assert.deepEqual(main.body, { version: list[0] });
      expectProblem(await t.api.post(`/v1/table/${idPath(name)}/version/describe`, { version: 99 }), 404, 11);
      expectProblem(await t.api.post(`/v1/table/${idPath('missing')}/version/describe`, { version: 1 }), 404, 4);
      expectProblem(await t.api.post(`/v1/table/${idPath(name)}/version/describe`, { version: -1 }), 400, 13);
      // Readers may describe versions.
      expectOk(await t.reader.post(`/v1/table/${idPath(name)}/version/describe`, { version: 1 }));
    });
  });

  describe("branch: honoured on every data operation, or a 404 (code 22), never main's data", () => {
    let name: string;
    let location: string;

    before(async () => {
      name = fresh('branched');
      location = await threeVersions(name); // main: ids 0..5, versions 1..3
      await branchAndAdd(location, 'dev', [{ id: 100, name: 'on-dev' }] as never); // dev: ids 0..5 and 100
    });

    it('reads: count_rows, query, explain_plan, describe, stats, versions, indexes', async () => {
      const p = `/v1/table/${idPath(name)}`;
      const count = async (body: Record<string, unknown>) => {
        const r = await t.api.post(`${p}/count_rows`, body);
        return r.status === 200 ? Number(r.body) : r;
      };
      assert.equal(await count({}), 6);
      assert.equal(await count({ branch: 'dev' }), 7);
      assert.equal(await count({ branch: 'main' }), 6);
      assert.equal(await count({ branch: '' }), 6);
      expectProblem((await count({ branch: 'ghost' })) as Reply, 404, 22, { msg: 'ghost' });
      assert.equal(Number((await t.api.get(`${p}/count_rows?branch=dev`)).body), 7);
      expectProblem(await t.api.get(`${p}/count_rows?branch=ghost`), 404, 22);

      assert.deepEqual(await queryIds(gw, t, name, { branch: 'dev', filter: 'id > 4' }), [5, 100]);
      assert.deepEqual(await queryIds(gw, t, name, { filter: 'id > 4' }), [5]);
      expectProblem(await t.api.post(`${p}/query`, { branch: 'ghost', k: 10 }), 404, 22);
      expectOk(await t.api.post(`${p}/explain_plan`, { query: { filter: 'id > 1' }, branch: 'dev' }));
      expectProblem(await t.api.post(`${p}/explain_plan`, { query: {}, branch: 'ghost' }), 404, 22);
      expectProblem(await t.api.post(`${p}/explain_plan`, { query: { branch: 'ghost' } }), 404, 22);

      expectProblem(await t.api.post(`${p}/describe`, { branch: 'ghost' }), 404, 22);
      expectProblem(await t.api.post(`${p}/stats`, { branch: 'ghost' }), 404, 22);
      assert.equal((await t.api.post(`${p}/stats`, { branch: 'dev' })).body.num_rows, 7);

      const versions = async (q: string) => (await t.api.post(`${p}/version/list${q}`)).body.versions.map((v: any) => v.version);
      const devVersions = await versions('?branch=dev');
      assert.deepEqual(await versions(''), [1, 2, 3]);
      assert.deepEqual(await versions('?branch=main'), [1, 2, 3]);
      assert.deepEqual(await versions('?branch='), [1, 2, 3]);
      assert.equal(devVersions[devVersions.length - 1], 4, `dev has its own latest version: ${devVersions}`);
      expectProblem(await t.api.post(`${p}/version/list?branch=ghost`), 404, 22);
      const devLatest = (await t.api.post(`${p}/version/list?branch=dev&descending=true&limit=1`)).body.versions[0];
      assert.ok(devLatest.manifest_path.includes('/tree/dev/_versions/'), devLatest.manifest_path);
      assert.ok(devLatest.manifest_path.startsWith(stored.objectPath(location) + '/tree/dev/_versions/'), devLatest.manifest_path);
      assert.equal(devLatest.manifest_size, await stored.manifestSize(gw.config.storageRoot, devLatest.manifest_path));
      assert.deepEqual((await t.api.post(`${p}/version/describe`, { branch: 'dev' })).body.version, devLatest);
      expectProblem(await t.api.post(`${p}/version/describe`, { branch: 'ghost' }), 404, 22);

      expectOk(await t.api.post(`${p}/index/list`, { branch: 'dev' }));
      expectProblem(await t.api.post(`${p}/index/list`, { branch: 'ghost' }), 404, 22);
      expectProblem(await t.api.post(`${p}/index/idx/stats`, { branch: 'ghost' }), 404, 22);

      // The official remote client's listVersions (no branch) still reads main's.
      const table = await remote.openTable(name);
      assert.deepEqual(
        (await table.listVersions()).map((v) => v.version),
        [1, 2, 3],
      );
      table.close();
    });

    it('writes go to the branch (main keeps its data) or are refused for an unknown branch', async () => {
      const p = `/v1/table/${idPath(name)}`;
      const count = async (branch?: string) => Number((await t.api.post(`${p}/count_rows`, branch ? { branch } : {})).body);
      const main = await count();
      const dev = await count('dev');
      const mainVersions = (await t.api.post(`${p}/version/list`)).body.versions.length;

      const ins = await postArrow(gw, t, `${p}/insert?branch=dev`, plainRows(200, 2));
      expectOk(ins);
      assert.equal(await count('dev'), dev + 2);
      expectProblem(await postArrow(gw, t, `${p}/insert?branch=ghost`, plainRows(300, 2)), 404, 22);
      const merged = await postArrow(
        gw,
        t,
        `${p}/merge_insert?branch=dev&on=id&when_not_matched_insert_all=true&when_matched_update_all=true`,
        plainRows(201, 3),
      );
      expectOk(merged);
      assert.equal(merged.body.num_inserted_rows, 2);
      assert.equal(await count('dev'), dev + 4);
      expectProblem(
        await postArrow(gw, t, `${p}/merge_insert?branch=ghost&on=id&when_not_matched_insert_all=true`, plainRows(300, 1)),
        404,
        22,
      );

      expectOk(await t.api.post(`${p}/update`, { updates: [['name', "'changed'"]], predicate: 'id = 200', branch: 'dev' }));
      expectProblem(await t.api.post(`${p}/update`, { updates: [['name', "'x'"]], branch: 'ghost' }), 404, 22);
      const del = await t.api.post(`${p}/delete`, { predicate: 'id >= 200', branch: 'dev' });
      expectOk(del);
      assert.equal(await count('dev'), dev);
      expectProblem(await t.api.post(`${p}/delete`, { predicate: 'id >= 0', branch: 'ghost' }), 404, 22);

      expectOk(await t.api.post(`${p}/add_columns`, { new_columns: [{ name: 'twice', expression: 'id * 2' }], branch: 'dev' }));
      expectProblem(await t.api.post(`${p}/add_columns`, { new_columns: [{ name: 'x', expression: 'id' }], branch: 'ghost' }), 404, 22);
      expectOk(await t.api.post(`${p}/alter_columns`, { alterations: [{ path: 'twice', rename: 'double' }], branch: 'dev' }));
      expectProblem(await t.api.post(`${p}/alter_columns`, { alterations: [{ path: 'name', rename: 'n' }], branch: 'ghost' }), 404, 22);
      const devSchema = await t.api.post(`${p}/describe`, { branch: 'dev' });
      assert.ok(devSchema.body.schema.fields.some((x: any) => x.name === 'double'));
      expectOk(await t.api.post(`${p}/drop_columns`, { columns: ['double'], branch: 'dev' }));
      expectProblem(await t.api.post(`${p}/drop_columns`, { columns: ['name'], branch: 'ghost' }), 404, 22);

      expectOk(await t.api.post(`${p}/create_index`, { column: 'id', index_type: 'BTREE', name: 'id_idx', branch: 'dev' }));
      expectProblem(await t.api.post(`${p}/create_index`, { column: 'id', index_type: 'BTREE', branch: 'ghost' }), 404, 22);
      const devIdx = await t.api.post(`${p}/index/list`, { branch: 'dev' });
      assert.deepEqual(
        devIdx.body.indexes.map((i: any) => i.index_name),
        ['id_idx'],
      );
      assert.equal((await t.api.post(`${p}/index/id_idx/stats`, { branch: 'dev' })).status, 200);
      expectProblem(await t.api.post(`${p}/index/id_idx/drop?branch=ghost`), 404, 22);
      expectProblem(await t.api.post(`${p}/index/id_idx/drop`), 404, 6, { what: 'main has no such index' });
      expectOk(await t.api.post(`${p}/index/id_idx/drop?branch=dev`));

      const devVersions = (await t.api.post(`${p}/version/list?branch=dev`)).body.versions.map((v: any) => v.version);
      const restored = await t.api.post(`${p}/restore`, { version: devVersions[0], branch: 'dev' });
      expectOk(restored);
      assert.equal(await count('dev'), main, 'dev restored to the version it was forked at');
      expectProblem(await t.api.post(`${p}/restore`, { version: 1, branch: 'ghost' }), 404, 22);

      // Main saw none of it.
      assert.equal(await count(), main);
      assert.equal((await t.api.post(`${p}/version/list`)).body.versions.length, mainVersions);
      const mainSchema = await t.api.post(`${p}/describe`, {});
      assert.deepEqual(
        mainSchema.body.schema.fields.map((x: any) => x.name),
        ['id', 'name'],
      );
      assert.deepEqual((await t.api.post(`${p}/index/list`, {})).body.indexes, []);
    });

    it('a table without data has no branches', async () => {
      const declared = fresh('declared');
      expectOk(await t.api.post(`/v1/table/${idPath(declared)}/declare`, {}));
      const p = `/v1/table/${idPath(declared)}`;
      expectProblem(await t.api.post(`${p}/count_rows`, { branch: 'dev' }), 404, 22);
      expectProblem(await t.api.post(`${p}/describe`, { branch: 'dev' }), 404, 22);
      expectProblem(await t.api.post(`${p}/stats`, { branch: 'dev' }), 404, 22);
      expectProblem(await postArrow(gw, t, `${p}/insert?branch=dev`, plainRows(0, 1)), 404, 22);
      expectProblem(
        await postArrow(gw, t, `${p}/merge_insert?branch=dev&on=id&when_not_matched_insert_all=true`, plainRows(0, 1)),
        404,
        22,
      );
      // Nothing was written: main's first version is still to come.
      assert.equal(Number((await t.api.post(`${p}/count_rows`, {})).body), 0);
      expectOk(await postArrow(gw, t, `${p}/insert?branch=main`, plainRows(0, 1)));
      assert.equal(Number((await t.api.post(`${p}/count_rows`, {})).body), 1);
    });
  });

  describe('register and refused schemas', () => {
    it('register answers the location it was given', async () => {
      const src = fresh('src');
      await threeVersions(src);
      const abs = (await t.api.post(`/v1/table/${idPath(src)}/deregister`, {})).body.location as string;
      const rel = abs.slice(abs.lastIndexOf('/') + 1);
      const reg = await t.api.post(`/v1/table/${idPath(fresh('registered'))}/register`, { location: rel });
      expectOk(reg);
      assert.equal(reg.body.location, rel);
      const again = await t.api.post(`/v1/table/${idPath(fresh('registered'))}/register`, { location: `./${rel}` });
      assert.equal(again.status, 409, again.text);
    });

    it("a schema the engine refuses is the caller's input: 400 code 20, not a 500", async () => {
      const body = Buffer.from(arrow.tableToIPC(new arrow.Table({ 'a.b': arrow.vectorFromArray([1, 2], new arrow.Int32()) }), 'stream'));
      const name = fresh('dotted');
      expectProblem(await postArrow(gw, t, `/v1/table/${idPath(name)}/create`, body), 400, 20, { msg: 'a.b' });
      expectProblem(await postArrow(gw, t, `/v1/tables/${name}`, body), 400, 20);
      expectProblem(await t.api.post(`/v1/table/${idPath(name)}/describe`, {}), 404, 4, { what: 'nothing was registered' });
      // The official remote client is told so, without retrying a server error.
      await assert.rejects(remote.createTable(name, [{ 'a.b': 1 }]), /a\.b/);
    });
  });
});
