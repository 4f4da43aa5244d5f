import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import { after, before, it } from 'node:test';
import * as lancedb from '@lancedb/lancedb';
import { expectProblem } from './helpers/assertions';
import { forEachCatalog, idPath, newTenant, operator, startGateway, Tenant, TestGateway } from './helpers/gateway';

const U64_MAX = (1n << 64n) - 1n;
/** Lance's V2 manifest name of a version (`u64::MAX - version`, 20 digits). */
const v2Name = (version: number) => `${(U64_MAX - BigInt(version)).toString().padStart(20, '0')}.manifest`;

/**
 * Catalog-managed versions (issue 13, the spec's `managed_versioning`): a database that enables it has its tables
 * described with `managed_versioning: true`; the unmodified official client in namespace mode then commits every
 * version through CreateTableVersion and finds the latest one through ListTableVersions, so the catalog (not the
 * object store's listing) decides which version is the latest. BatchCreateTableVersions and BatchCommitTables commit
 * several tables in one catalog transaction: all or none.
 */
forEachCatalog('catalog-managed versions', (kind) => {
  let gw: TestGateway;
  let managed: Tenant;
  let plain: Tenant;
  let ns: lancedb.Connection;

  const rows = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ id: from + i, label: `row-${from + i}` }));
  const path_ = (table: string, op: string) => `/v1/table/${idPath(table)}/${op}`;
  const connect = (tenant: Tenant, key = tenant.writeKey) =>
    lancedb.connectNamespace('rest', { uri: gw.url, headers: { 'x-api-key': key, 'x-service-database': tenant.name } });
  const location = async (table: string): Promise<string> => (await managed.api.post(path_(table, 'describe'), {})).body.location;
  const local = () => process.env.TEST_STORAGE !== 's3';

  /**
   * A genuine staged manifest of the next version of `table`, as the official client stages one before it calls
   * CreateTableVersion: the test writes the rows straight into the table's folder with the engine (local storage),
   * then moves the manifest that write committed to a staging name, so only the catalog can make it a version.
   */
  async function stageNext(table: string, added: number, from: number): Promise<{ version: number; manifest_path: string; size: number }> {
    const loc = await location(table);
    const db = await lancedb.connect(path.dirname(loc));
    const t = await db.openTable(path.basename(loc).replace(/\.lance$/, ''));
    await t.add(rows(from, added));
    const version = await t.version();
    t.close();
    db.close();
    const final = path.join(loc, '_versions', v2Name(version));
    const staged = `${final}-${randomUUID()}`;
    fs.renameSync(final, staged);
    fs.rmSync(path.join(loc, '_versions', 'latest_version_hint.json'), { force: true });
    return { version, manifest_path: staged.replace(/^\/+/, ''), size: fs.statSync(staged).size };
  }

  const versionsOf = async (table: string): Promise<number[]> => {
    const r = await managed.api.post(`${path_(table, 'version/list')}?descending=true`, null);
    assert.equal(r.status, 200, r.text);
    return r.body.versions.map((v: { version: number }) => v.version);
  };
  const countNow = async (table: string): Promise<number> => {
    const c = await connect(managed);
    try {
      const t = await c.openTable(table);
      return await t.countRows();
    } finally {
      c.close();
    }
  };

  before(async () => {
    gw = await startGateway(kind);
    managed = await newTenant(gw);
    plain = await newTenant(gw);
    const r = await operator(gw).request('PATCH', `/admin/v1/databases/${managed.name}`, { managed_versioning: true });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.managed_versioning, true);
    ns = await connect(managed);
  });
  after(async () => {
    ns?.close();
    await gw.close();
  });

  it('operator API: managed_versioning is reported, and only changes while the database holds no tables', async () => {
    assert.equal((await operator(gw).get(`/admin/v1/databases/${managed.name}`)).body.managed_versioning, true);
    assert.equal((await operator(gw).get(`/admin/v1/databases/${plain.name}`)).body.managed_versioning, false);
    const made = await operator(gw).post('/admin/v1/databases', { name: `mv_${randomUUID().slice(0, 8)}`, managed_versioning: true });
    assert.equal(made.status, 201, made.text);
    assert.equal(made.body.managed_versioning, true);
    await ns.createTable('pinned', rows(0, 1));
    const refused = await operator(gw).request('PATCH', `/admin/v1/databases/${managed.name}`, { managed_versioning: false });
    expectProblem(refused, 409, 14, { msg: /managed_versioning cannot change/ });
  });

  it('the official client (namespace mode) commits through version/create, and version/list|describe answer from the catalog', async () => {
    const t = await ns.createTable('events', rows(0, 3));
    assert.equal(await t.version(), 1);
    await t.add(rows(3, 2));
    assert.equal(await t.version(), 2);

    const described = await managed.api.post(path_('events', 'describe'), {});
    assert.equal(described.status, 200, described.text);
    assert.equal(described.body.managed_versioning, true);
    // A database without it says nothing of the kind (Lance commits to storage itself there).
    const p = await connect(plain);
    await p.createTable('events', rows(0, 1));
    assert.equal((await plain.api.post(path_('events', 'describe'), {})).body.managed_versioning, undefined);
    p.close();

    const listed = await managed.api.post(`${path_('events', 'version/list')}?descending=true`, null);
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(
      listed.body.versions.map((v: { version: number }) => v.version),
      [2, 1],
    );
    for (const v of listed.body.versions) {
      assert.ok(v.manifest_path.endsWith(`/_versions/${v2Name(v.version)}`), v.manifest_path);
      assert.ok(v.manifest_size > 0);
      assert.ok(v.timestamp_millis > 0);
    }
    const one = await managed.api.post(path_('events', 'version/describe'), { version: 1 });
    assert.equal(one.status, 200, one.text);
    assert.equal(one.body.version.version, 1);
    expectProblem(await managed.api.post(path_('events', 'version/describe'), { version: 9 }), 404, 11);

    if (local()) {
      // The staged manifests were published under the versions' names and removed.
      const files = fs.readdirSync(path.join(await location('events'), '_versions'));
      assert.deepEqual(
        files.filter((f) => f.includes('.manifest-')),
        [],
        files.join(', '),
      );
      assert.ok(files.includes(v2Name(1)) && files.includes(v2Name(2)), files.join(', '));
    }

    // Another client reads the latest version and time-travels through version/describe.
    const other = await connect(managed);
    const again = await other.openTable('events');
    assert.equal(await again.version(), 2);
    assert.equal(await again.countRows(), 5);
    await again.checkout(1);
    assert.equal(await again.countRows(), 3);
    other.close();
  });

  it('the catalog decides which version is the latest: without its record of version 2, clients read version 1', async () => {
    const t = await ns.createTable('arbiter', rows(0, 2));
    await t.add(rows(2, 2));
    assert.equal(await countNow('arbiter'), 4);
    const del = await managed.api.post(path_('arbiter', 'version/delete'), { ranges: [{ start_version: 2, end_version: -1 }] });
    assert.equal(del.status, 200, del.text);
    assert.equal(del.body.deleted_count, 1);
    assert.deepEqual(await versionsOf('arbiter'), [1]);
    // Version 2's manifest is still on storage; the catalog no longer lists it, so it is not the table's latest.
    assert.equal(await countNow('arbiter'), 2);
  });

  it('a deleted branch takes its version records along: a branch re-created under its name has only its own versions', async () => {
    const t = await ns.createTable('rebranched', rows(0, 3));
    await t.add(rows(3, 2));
    const api = managed.api;
    const branchVersions = async (): Promise<number[]> => {
      const r = await api.post(`${path_('rebranched', 'version/list')}?branch=dev&descending=true`, null);
      assert.equal(r.status, 200, r.text);
      return r.body.versions.map((v: { version: number }) => v.version);
    };
    assert.equal((await api.post(path_('rebranched', 'branches/create'), { name: 'dev' })).status, 200);
    // A write on the branch through the gateway: its versions are adopted into the catalog.
    assert.equal((await api.post(path_('rebranched', 'delete'), { predicate: 'id < 2', branch: 'dev' })).status, 200);
    assert.ok((await branchVersions()).includes(3), "the branch's write was recorded");

    assert.equal((await api.post(path_('rebranched', 'branches/delete'), { name: 'dev' })).status, 200);
    assert.deepEqual(await branchVersions(), [], "the deleted branch's versions are no longer listed");
    // The same name again, from main's version 1: none of the old branch's versions (2, 3) may show.
    assert.equal((await api.post(path_('rebranched', 'branches/create'), { name: 'dev', from_version: 1 })).status, 200);
    assert.deepEqual(
      (await branchVersions()).filter((v) => v > 1),
      [],
    );

    // The official client (namespace mode) checks the new branch out: main's version 1, 3 rows.
    const c = await connect(managed);
    try {
      const branches = await (await c.openTable('rebranched')).branches();
      const dev = await branches.checkout('dev');
      assert.equal(await dev.countRows(), 3);
      // A branch the client deletes itself (on storage, past the gateway) leaves its records behind; a create of the
      // name through the gateway does not take them over.
      assert.equal((await api.post(path_('rebranched', 'delete'), { predicate: 'id < 1', branch: 'dev' })).status, 200);
      assert.ok((await branchVersions()).length > 0);
      await branches.delete('dev');
      assert.equal((await api.post(path_('rebranched', 'branches/create'), { name: 'dev' })).status, 200);
      assert.deepEqual(await branchVersions(), []);
      assert.equal(await (await branches.checkout('dev')).countRows(), 5);
    } finally {
      c.close();
    }
  });

  it('two clients committing the same version: one gets 409 (code 14) from version/create, re-reads and retries; both commits land', async () => {
    await ns.createTable('race', rows(0, 1));
    // A proxy in front of the gateway holds the first version/create until a second one arrives, so the two clients'
    // commits of version 2 reach the catalog together, and counts what version/create answered.
    const answers: number[] = [];
    const held: Array<() => void> = [];
    const proxy = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const isCreate = /\/version\/create/.test(req.url ?? '');
        const forward = () => {
          const up = http.request(gw.url + (req.url ?? ''), { method: req.method, headers: req.headers }, (r) => {
            if (isCreate) answers.push(r.statusCode ?? 0);
            res.writeHead(r.statusCode ?? 502, r.headers);
            r.pipe(res);
          });
          up.end(Buffer.concat(chunks));
        };
        if (isCreate && answers.length === 0 && held.length < 2) {
          held.push(forward);
          if (held.length === 2) held.splice(0).forEach((f) => f());
        } else forward();
      });
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const via = `http://127.0.0.1:${(proxy.address() as { port: number }).port}`;
    const open = () =>
      lancedb.connectNamespace('rest', { uri: via, headers: { 'x-api-key': managed.writeKey, 'x-service-database': managed.name } });
    const a = await open();
    const b = await open();
    try {
      const ta = await a.openTable('race');
      const tb = await b.openTable('race');
      assert.equal(await ta.version(), 1);
      assert.equal(await tb.version(), 1);
      await Promise.all([ta.add(rows(100, 2)), tb.add(rows(200, 3))]);
    } finally {
      a.close();
      b.close();
      proxy.close();
    }
    assert.deepEqual(answers.filter((s) => s === 409).length, 1, `version/create answers: ${answers.join(', ')}`);
    assert.deepEqual(answers.filter((s) => s === 200).length, 2, `version/create answers: ${answers.join(', ')}`);
    assert.deepEqual(await versionsOf('race'), [3, 2, 1]);
    assert.equal(await countNow('race'), 6);

    // The same conflict in raw HTTP: the version exists.
    const v1 = (await managed.api.post(path_('race', 'version/describe'), { version: 1 })).body.version;
    const again = await managed.api.post(path_('race', 'version/create'), { version: 1, manifest_path: v1.manifest_path });
    expectProblem(again, 409, 14, { msg: /version 1 of table 'race' already exists/ });
  });

  it('writes through the gateway (remote dialect) are recorded in the catalog, and namespace-mode commits build on them', async () => {
    const remote = await lancedb.connect(`db://${managed.name}`, { apiKey: managed.writeKey, hostOverride: gw.url });
    try {
      const r = await remote.createTable('mixed', rows(0, 2));
      await r.add(rows(2, 1));
      assert.deepEqual(await versionsOf('mixed'), [2, 1], "the gateway engine's commits were adopted");
      // A namespace-mode handle opened now is at version 2 ...
      const held = await ns.openTable('mixed');
      assert.equal(await held.version(), 2);
      // ... while the gateway commits version 3; the handle's commit then lands after it.
      await r.add(rows(3, 1));
      await held.add(rows(4, 2));
      assert.deepEqual(await versionsOf('mixed'), [4, 3, 2, 1]);
      assert.equal(await countNow('mixed'), 6);
      assert.equal(await r.countRows(), 6, 'the gateway reads the namespace-mode commit too');
    } finally {
      remote.close();
    }
  });

  it('version/create refuses what is not a staged manifest of the table, a reader, and a database without managed versions', async () => {
    await ns.createTable('strict', rows(0, 1));
    const v1 = (await managed.api.post(path_('strict', 'version/describe'), {})).body.version;
    const dir = v1.manifest_path.slice(0, v1.manifest_path.lastIndexOf('/'));
    const other = (await managed.api.post(path_('events', 'version/describe'), {})).body.version.manifest_path;
    expectProblem(await managed.api.post(path_('strict', 'version/create'), { version: 2, manifest_path: other }), 400, 13, {
      msg: /manifest_path must name/,
    });
    expectProblem(
      await managed.api.post(path_('strict', 'version/create'), { version: 2, manifest_path: `${dir}/../../x.manifest` }),
      400,
      13,
    );
    expectProblem(
      await managed.api.post(path_('strict', 'version/create'), { version: 2, manifest_path: `${dir}/${v2Name(2)}-nothing` }),
      400,
      13,
      {
        msg: /does not exist/,
      },
    );
    expectProblem(await managed.api.post(path_('strict', 'version/create'), { manifest_path: `${dir}/x` }), 400, 13);
    assert.equal((await managed.reader.post(path_('strict', 'version/create'), { version: 2, manifest_path: `${dir}/x` })).status, 403);
    expectProblem(await managed.api.post(path_('nope', 'version/create'), { version: 2, manifest_path: `${dir}/x` }), 404, 4);
    expectProblem(await plain.api.post(path_('events', 'version/create'), { version: 2, manifest_path: `${dir}/x` }), 406, 0, {
      msg: /managed_versioning is off/,
    });
    assert.deepEqual(await versionsOf('strict'), [1]);
  });

  it(
    'batch-create is all or none: one member whose version exists fails the batch, and nothing of it is committed',
    { skip: !local() && 'stages manifests on local storage' },
    async () => {
      await ns.createTable('left', rows(0, 2));
      await ns.createTable('right', rows(0, 3));
      const left2 = await stageNext('left', 4, 10);
      const right2 = await stageNext('right', 5, 20);
      assert.equal(left2.version, 2);
      const rightV1 = (await managed.api.post(path_('right', 'version/describe'), { version: 1 })).body.version;

      const failed = await managed.api.post('/v1/table/version/batch-create', {
        entries: [
          { id: ['left'], version: 2, manifest_path: left2.manifest_path, manifest_size: left2.size },
          { id: ['right'], version: 1, manifest_path: rightV1.manifest_path },
        ],
      });
      expectProblem(failed, 409, 14, { msg: /version 1 of table 'right' already exists/ });
      // Nothing of the batch: 'left' is still at version 1 in the catalog, for clients, and on storage.
      assert.deepEqual(await versionsOf('left'), [1]);
      assert.equal(await countNow('left'), 2);
      const leftDir = path.join(await location('left'), '_versions');
      assert.ok(!fs.existsSync(path.join(leftDir, v2Name(2))), 'the batch left no published manifest behind');
      assert.ok(fs.existsSync('/' + left2.manifest_path), 'the staged manifest is still there to retry with');

      const ok = await managed.api.post('/v1/table/version/batch-create', {
        entries: [
          { id: ['left'], version: 2, manifest_path: left2.manifest_path, manifest_size: left2.size, metadata: { batch: 'one' } },
          { id: ['right'], version: 2, manifest_path: right2.manifest_path },
        ],
      });
      assert.equal(ok.status, 200, ok.text);
      assert.deepEqual(
        ok.body.versions.map((v: { version: number }) => v.version),
        [2, 2],
      );
      assert.deepEqual(ok.body.versions[0].metadata, { batch: 'one' });
      assert.equal(await countNow('left'), 6);
      assert.equal(await countNow('right'), 8);
      assert.ok(!fs.existsSync('/' + left2.manifest_path), 'staging removed once committed');
    },
  );

  it(
    'batch-commit applies creates and deletes on several tables atomically; a failing member or an unsupported kind applies nothing',
    { skip: !local() && 'stages manifests on local storage' },
    async () => {
      await ns.createTable('bc_a', rows(0, 1));
      await ns.createTable('bc_b', rows(0, 1));
      const b = await ns.openTable('bc_b');
      await b.add(rows(1, 1)); // bc_b: versions 1, 2
      const a2 = await stageNext('bc_a', 2, 10);
      const b1 = (await managed.api.post(path_('bc_b', 'version/describe'), { version: 1 })).body.version;

      const failing = await managed.api.post('/v1/table/batch-commit', {
        operations: [
          { delete_table_versions: { id: ['bc_b'], ranges: [{ start_version: 2, end_version: 3 }] } },
          { create_table_version: { id: ['bc_a'], version: 2, manifest_path: a2.manifest_path } },
          { create_table_version: { id: ['bc_b'], version: 1, manifest_path: b1.manifest_path } },
        ],
      });
      // The delete and bc_a's version were applied inside the transaction before bc_b's version failed it.
      expectProblem(failing, 409, 14, { msg: /version 1 of table 'bc_b' already exists/ });
      assert.deepEqual(await versionsOf('bc_a'), [1]);
      assert.deepEqual(await versionsOf('bc_b'), [2, 1], 'the delete of the failed batch was rolled back');

      const unsupported = await managed.api.post('/v1/table/batch-commit', {
        operations: [
          { create_table_version: { id: ['bc_a'], version: 2, manifest_path: a2.manifest_path } },
          { declare_table: { id: ['bc_new'] } },
        ],
      });
      expectProblem(unsupported, 406, 0, { msg: /declare_table/ });
      assert.deepEqual(await versionsOf('bc_a'), [1]);

      const ok = await managed.api.post('/v1/table/batch-commit', {
        operations: [
          { create_table_version: { id: ['bc_a'], version: 2, manifest_path: a2.manifest_path } },
          { delete_table_versions: { id: ['bc_b'], ranges: [{ start_version: 2, end_version: -1 }] } },
        ],
      });
      assert.equal(ok.status, 200, ok.text);
      assert.equal(ok.body.results[0].create_table_version.version.version, 2);
      assert.equal(ok.body.results[1].delete_table_versions.deleted_count, 1);
      assert.deepEqual(await versionsOf('bc_a'), [2, 1]);
      assert.deepEqual(await versionsOf('bc_b'), [1]);
      assert.equal(await countNow('bc_a'), 3);
      assert.equal(await countNow('bc_b'), 1);
    },
  );
});
