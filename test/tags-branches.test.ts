import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import * as lancedb from '@lancedb/lancedb';
import { expectProblem } from './helpers/assertions';
import { forEachCatalog, idPath, newTenant, operator, startGateway, Tenant, TestGateway } from './helpers/gateway';

/**
 * Tags, branches, field metadata, AnalyzeTableQueryPlan and CreateTableScalarIndex (issue 13): with the unmodified
 * official client in remote mode (every call through the gateway) and namespace mode (the client reads and writes
 * the Lance refs itself, so both sides must see the same tags and branches), and raw HTTP in the spec's shapes.
 */
forEachCatalog('tags, branches and metadata', (kind) => {
  let gw: TestGateway;
  let tenant: Tenant;
  let remote: lancedb.Connection;
  let ns: lancedb.Connection;

  const rows = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ id: from + i, label: `row-${from + i}` }));
  const path = (table: string, op: string) => `/v1/table/${idPath(table)}/${op}`;

  /** A table with versions 1 (3 rows), 2 (5 rows) and 3 (6 rows), written through the remote client. */
  async function threeVersions(name: string): Promise<lancedb.Table> {
    const t = await remote.createTable(name, rows(0, 3));
    await t.add(rows(3, 2));
    await t.add(rows(5, 1));
    assert.equal(await t.version(), 3);
    return t;
  }

  before(async () => {
    gw = await startGateway(kind);
    tenant = await newTenant(gw);
    remote = await lancedb.connect(`db://${tenant.name}`, { apiKey: tenant.writeKey, hostOverride: gw.url });
    ns = await lancedb.connectNamespace('rest', {
      uri: gw.url,
      headers: { 'x-api-key': tenant.writeKey, 'x-service-database': tenant.name },
    });
  });
  after(async () => {
    remote?.close();
    ns?.close();
    await gw.close();
  });

  it('remote mode: table.tags() lists, creates, resolves, updates and deletes tags, and checkout(tag) reads the tagged version', async () => {
    const t = await threeVersions('tagged');
    const tags = await t.tags();
    assert.deepEqual(Object.keys(await tags.list()), []);
    await tags.create('release', 1);
    await tags.create('latest_good', 3);
    const listed = await tags.list();
    assert.deepEqual(Object.keys(listed).sort(), ['latest_good', 'release']);
    assert.equal(listed.release.version, 1);
    assert.ok(listed.release.manifestSize > 0);
    assert.equal(await tags.getVersion('release'), 1);

    await tags.update('release', 2);
    assert.equal(await tags.getVersion('release'), 2);

    // checkoutTag: the remote client resolves the tag (tags/version) and reads that version.
    const pinned = await remote.openTable('tagged');
    await pinned.checkout('release');
    assert.equal(await pinned.version(), 2);
    assert.equal(await pinned.countRows(), 5);
    await pinned.checkoutLatest();
    assert.equal(await pinned.countRows(), 6);

    await assert.rejects(tags.create('release', 1), /already exists|409/);
    await assert.rejects(tags.getVersion('ghost'), /not found|does not exist|404/i);
    await tags.delete('latest_good');
    assert.deepEqual(Object.keys(await tags.list()), ['release']);
    await assert.rejects(pinned.checkout('latest_good'), /not found|does not exist|404/i);
  });

  it('DescribeTable with a tag answers the tagged version and its schema (a tag into a branch too); unknown tag 404 code 8', async () => {
    const t = await threeVersions('described_tag');
    const api = tenant.api;
    assert.equal((await api.post(path('described_tag', 'tags/create'), { tag: 'first', version: 1 })).status, 200);
    await t.addColumns([{ name: 'twice', valueSql: 'id * 2' }]);
    const tagged = await api.post(path('described_tag', 'describe'), { tag: 'first' });
    assert.equal(tagged.status, 200, tagged.text);
    assert.equal(tagged.body.version, 1);
    assert.deepEqual(
      tagged.body.schema.fields.map((f: { name: string }) => f.name),
      ['id', 'label'],
    );
    const latest = await api.post(path('described_tag', 'describe'), {});
    assert.equal(latest.body.version, 4);
    assert.ok(latest.body.schema.fields.some((f: { name: string }) => f.name === 'twice'));

    assert.equal((await api.post(path('described_tag', 'branches/create'), { name: 'side' })).status, 200);
    const side = await (await t.branches()).checkout('side');
    await side.add(rows(100, 1));
    const sideVersion = await side.version();
    assert.equal(
      (await api.post(path('described_tag', 'tags/create'), { tag: 'on_side', version: sideVersion, branch: 'side' })).status,
      200,
    );
    const onSide = await api.post(path('described_tag', 'describe'), { tag: 'on_side' });
    assert.equal(onSide.status, 200, onSide.text);
    assert.equal(onSide.body.version, sideVersion);

    expectProblem(await api.post(path('described_tag', 'describe'), { tag: 'ghost' }), 404, 8);
    expectProblem(await api.post(path('described_tag', 'describe'), { tag: 'first', version: 2 }), 400, 13);
  });

  it('branches/diff and branches/cherry_pick: 406 code 0 saying the open engine cannot (remote client and raw HTTP), nothing changed', async () => {
    const t = await threeVersions('merging');
    const api = tenant.api;
    assert.equal((await api.post(path('merging', 'branches/create'), { name: 'work' })).status, 200);
    const work = await (await t.branches()).checkout('work');
    await work.add(rows(50, 2));
    for (const [op, body] of [
      ['branches/diff', { from_branch: 'work' }],
      ['branches/cherry_pick', { from_branch: 'work', dry_run: false }],
    ] as const) {
      expectProblem(await api.post(path('merging', op), body), 406, 0, { msg: /only for LanceDB Enterprise tables/ });
    }
    expectProblem(await api.post(path('nope_table', 'branches/diff'), { from_branch: 'work' }), 404, 4);
    expectProblem(await tenant.reader.post(path('merging', 'branches/cherry_pick'), { from_branch: 'work', dry_run: true }), 403, 15);
    await assert.rejects((await t.branches()).diff('work'), /406|Enterprise/);
    await assert.rejects((await t.branches()).cherryPick('work', true), /406|Enterprise/);
    assert.equal(await t.countRows(), 6, 'main unchanged');
    assert.equal(await t.version(), 3);
  });

  it('answers the spec codes: 409 code 9 for an existing tag, 404 code 8 for an unknown one, 404 code 11 for no such version, 403 for a reader', async () => {
    await threeVersions('codes');
    const api = tenant.api;
    assert.equal((await api.post(path('codes', 'tags/create'), { tag: 'v1', version: 1 })).status, 200);
    expectProblem(await api.post(path('codes', 'tags/create'), { tag: 'v1', version: 2 }), 409, 9);
    expectProblem(await api.post(path('codes', 'tags/version'), { tag: 'nope' }), 404, 8);
    expectProblem(await api.post(path('codes', 'tags/update'), { tag: 'nope', version: 1 }), 404, 8);
    expectProblem(await api.post(path('codes', 'tags/delete'), { tag: 'nope' }), 404, 8);
    expectProblem(await api.post(path('codes', 'tags/create'), { tag: 'v99', version: 99 }), 404, 11);
    expectProblem(await api.post(path('codes', 'tags/update'), { tag: 'v1', version: 99 }), 404, 11);
    expectProblem(await api.post(path('codes', 'tags/create'), { tag: 'bad name!', version: 1 }), 400, 13);
    expectProblem(await api.post(path('codes', 'tags/create'), { tag: 'v2' }), 400, 13);
    expectProblem(await api.post(path('missing_table', 'tags/list')), 404, 4);
    expectProblem(await tenant.reader.post(path('codes', 'tags/create'), { tag: 'r', version: 1 }), 403, 15);
    // A reader may read tags; the spec answers `{tags}`, the tag still points to version 1.
    const listed = await tenant.reader.post(path('codes', 'tags/list'));
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(listed.body, { tags: { v1: { version: 1, manifestSize: listed.body.tags.v1.manifestSize } } });
    assert.deepEqual((await tenant.reader.post(path('codes', 'tags/version'), { tag: 'v1' })).body, { version: 1 });
    assert.deepEqual((await tenant.reader.get(path('codes', 'tags/list'))).body, listed.body, 'GET answers as POST');

    // Paging by name.
    for (const tag of ['a', 'b', 'c']) assert.equal((await api.post(path('codes', 'tags/create'), { tag, version: 2 })).status, 200);
    const first = await api.post(`${path('codes', 'tags/list')}?limit=2`);
    assert.deepEqual(Object.keys(first.body.tags), ['a', 'b']);
    assert.ok(first.body.page_token);
    const rest = await api.post(`${path('codes', 'tags/list')}?limit=2&page_token=${encodeURIComponent(first.body.page_token)}`);
    assert.deepEqual(Object.keys(rest.body.tags), ['c', 'v1']);
    assert.equal(rest.body.page_token, undefined);

    // Tag changes are audited.
    const audit = await operator(gw).get(`/admin/v1/databases/${tenant.name}/audit?limit=1000`);
    const actions = (audit.body.events as Array<{ action: string }>).map((e) => e.action);
    assert.ok(actions.includes('table.tag_create'), actions.join(','));
  });

  it("namespace mode: tags made through the gateway are Lance tags the client reads itself, and the client's tags are the gateway's", async () => {
    await threeVersions('shared_tags');
    assert.equal((await tenant.api.post(path('shared_tags', 'tags/create'), { tag: 'gw_tag', version: 1 })).status, 200);

    const t = await ns.openTable('shared_tags');
    const tags = await t.tags();
    assert.equal((await tags.list()).gw_tag.version, 1);
    await t.checkout('gw_tag');
    assert.equal(await t.countRows(), 3);
    await t.checkoutLatest();

    await tags.create('client_tag', 2);
    const listed = await tenant.api.post(path('shared_tags', 'tags/list'));
    assert.deepEqual(Object.keys(listed.body.tags), ['client_tag', 'gw_tag']);
    assert.equal(listed.body.tags.client_tag.version, 2);
    const viaRemote = await (await (await remote.openTable('shared_tags')).tags()).list();
    assert.equal(viaRemote.client_tag.version, 2);

    assert.equal((await tenant.api.post(path('shared_tags', 'tags/delete'), { tag: 'client_tag' })).status, 200);
    assert.deepEqual(Object.keys(await tags.list()), ['gw_tag']);
  });

  it('branches: create from main or another branch at a version, list with parent and creation time, write on a branch, delete', async () => {
    await threeVersions('branched');
    const api = tenant.api;
    assert.equal((await api.post(path('branched', 'branches/create'), { name: 'dev' })).status, 200);
    assert.equal((await api.post(path('branched', 'branches/create'), { name: 'old', from_version: 1 })).status, 200);

    const before = Math.floor(Date.now() / 1000) - 60;
    const listed = await api.post(path('branched', 'branches/list'));
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(Object.keys(listed.body.branches), ['dev', 'old']);
    assert.equal(listed.body.branches.dev.parentVersion, 3);
    assert.equal(listed.body.branches.old.parentVersion, 1);
    assert.equal(listed.body.branches.dev.parentBranch, undefined);
    assert.ok(listed.body.branches.dev.createAt > before, listed.text);
    assert.ok(listed.body.branches.dev.manifestSize > 0);

    // The branch has its own data: main is untouched by a write on it.
    assert.equal((await api.post(path('branched', 'delete'), { predicate: 'id < 2', branch: 'dev' })).status, 200);
    assert.equal((await api.post(path('branched', 'count_rows'), { branch: 'dev' })).body, 4);
    assert.equal((await api.post(path('branched', 'count_rows'), { branch: 'old' })).body, 3);
    assert.equal((await api.post(path('branched', 'count_rows'), {})).body, 6);

    // A branch of a branch names its parent.
    assert.equal((await api.post(path('branched', 'branches/create'), { name: 'feature', from_branch: 'dev' })).status, 200);
    const nested = (await api.post(path('branched', 'branches/list'))).body.branches.feature;
    assert.equal(nested.parentBranch, 'dev');
    assert.equal((await api.post(path('branched', 'count_rows'), { branch: 'feature' })).body, 4);

    // The namespace-mode client sees the same branches, and its branches are the gateway's.
    const t = await ns.openTable('branched');
    const branches = await t.branches();
    assert.deepEqual(Object.keys(await branches.list()).sort(), ['dev', 'feature', 'old']);
    (await branches.create('from_client')).close();
    assert.ok('from_client' in (await api.post(path('branched', 'branches/list'))).body.branches);

    // Codes: 409 code 23 (exists, main too), 404 code 22 (unknown), 404 code 11 (no such version), 409 code 19 (tagged).
    expectProblem(await api.post(path('branched', 'branches/create'), { name: 'dev' }), 409, 23);
    expectProblem(await api.post(path('branched', 'branches/create'), { name: 'main' }), 409, 23);
    expectProblem(await api.post(path('branched', 'branches/create'), { name: 'x', from_branch: 'ghost' }), 404, 22);
    expectProblem(await api.post(path('branched', 'branches/create'), { name: 'y', from_version: 99 }), 404, 11, {
      msg: 'version 99 not found',
    });
    // A version the source branch does not have is no missing branch; the answer names the version and the branch,
    // never the manifest's storage path.
    const noVersion = await api.post(path('branched', 'branches/create'), { name: 'x', from_branch: 'dev', from_version: 99 });
    expectProblem(noVersion, 404, 11, { msg: "version 99 of branch 'dev' not found" });
    assert.doesNotMatch(noVersion.text, /\.lance\b|_versions|\.manifest|tree\//, noVersion.text);
    assert.ok(!noVersion.text.includes(gw.dataDir), noVersion.text);
    expectProblem(await api.post(path('branched', 'branches/create'), { name: 'x', from_branch: 'ghost', from_version: 1 }), 404, 22, {
      msg: "branch 'ghost'",
    });
    expectProblem(await api.post(path('branched', 'branches/create'), { name: 'bad name!' }), 400, 13);
    // A name part longer than a file name may be (found by the fuzzer): the caller's 400, never a 5xx.
    expectProblem(await api.post(path('branched', 'branches/create'), { name: 'x'.repeat(300) }), 400, 13);
    expectProblem(await api.post(path('branched', 'branches/create'), { name: `ok/${'x'.repeat(256)}` }), 400, 13);
    for (const name of ['.', 'a/./b', '..'])
      expectProblem(await api.post(path('branched', 'branches/create'), { name }), 400, 13, { what: name });
    expectProblem(await api.post(path('branched', 'count_rows'), { branch: '.' }), 400, 13);
    expectProblem(await api.post(path('branched', 'branches/delete'), { name: 'ghost' }), 404, 22);
    expectProblem(await tenant.reader.post(path('branched', 'branches/create'), { name: 'r' }), 403, 15);

    // A tag into a branch names it; the branch cannot go while the tag points into it.
    assert.equal((await api.post(path('branched', 'tags/create'), { tag: 'on_dev', version: 4, branch: 'dev' })).status, 200);
    assert.deepEqual((await api.post(path('branched', 'tags/version'), { tag: 'on_dev' })).body, { version: 4, branch: 'dev' });
    assert.equal((await api.post(path('branched', 'tags/list'))).body.tags.on_dev.branch, 'dev');
    assert.equal((await api.post(path('branched', 'branches/delete'), { name: 'feature' })).status, 200);
    expectProblem(await api.post(path('branched', 'branches/delete'), { name: 'dev' }), 409, 19);
    assert.equal((await api.post(path('branched', 'tags/delete'), { tag: 'on_dev' })).status, 200);
    assert.equal((await api.post(path('branched', 'branches/delete'), { name: 'dev' })).status, 200);
    expectProblem(await api.post(path('branched', 'count_rows'), { branch: 'dev' }), 404, 22);
    assert.deepEqual(Object.keys((await api.post(path('branched', 'branches/list'))).body.branches), ['from_client', 'old']);
    expectProblem(await api.post(path('branched', 'branches/delete'), { name: 'main' }), 400, 13);
  });

  it('concurrent creates of one branch or one tag: exactly one succeeds, the others get 409 with the spec code', async () => {
    await threeVersions('races');
    const branchTries = await Promise.all(
      Array.from({ length: 6 }, () => tenant.api.post(path('races', 'branches/create'), { name: 'race' })),
    );
    assert.equal(branchTries.filter((r) => r.status === 200).length, 1, branchTries.map((r) => `${r.status} ${r.text}`).join('\n'));
    for (const r of branchTries.filter((x) => x.status !== 200)) expectProblem(r, 409, 23);
    const tagTries = await Promise.all(
      Array.from({ length: 6 }, (_, i) => tenant.api.post(path('races', 'tags/create'), { tag: 'race', version: 1 + (i % 3) })),
    );
    assert.equal(tagTries.filter((r) => r.status === 200).length, 1, tagTries.map((r) => `${r.status} ${r.text}`).join('\n'));
    for (const r of tagTries.filter((x) => x.status !== 200)) expectProblem(r, 409, 9);
  });

  it('remote mode: table.branches() creates, lists, checks out (writes stay on the branch) and deletes branches', async () => {
    const t = await threeVersions('remote_branches');
    const branches = await t.branches();
    const dev = await branches.create('dev');
    assert.equal(dev.currentBranch(), 'dev');
    await dev.add(rows(100, 4));
    assert.equal(await dev.countRows(), 10);
    assert.equal(await t.countRows(), 6);
    const listed = await branches.list();
    assert.deepEqual(Object.keys(listed), ['dev']);
    assert.equal(listed.dev.parentVersion, 3);
    const again = await branches.checkout('dev');
    assert.equal(await again.countRows(), 10);
    await assert.rejects(branches.create('dev'), /already exists|409/i);
    await assert.rejects(branches.checkout('ghost'), /not found|does not exist|ghost/i);
    // A tag made on a branch handle points into the branch.
    await (await dev.tags()).create('dev_tag', await dev.version());
    assert.deepEqual((await tenant.api.post(path('remote_branches', 'tags/version'), { tag: 'dev_tag' })).body, {
      version: 4,
      branch: 'dev',
    });
    await (await t.tags()).delete('dev_tag');
    await branches.delete('dev');
    assert.deepEqual(Object.keys(await branches.list()), []);
  });

  it('update_field_metadata merges, removes and replaces field metadata (remote client and spec), 404 code 12 for an unknown field', async () => {
    const t = await threeVersions('fieldmeta');
    const r = await t.updateFieldMetadata([{ path: 'id', metadata: { unit: 'count', owner: 'a' } }]);
    assert.equal(r.version, 4);
    const spec = await tenant.api.post(path('fieldmeta', 'update_field_metadata'), {
      updates: [
        { path: 'id', metadata: { owner: null, note: 'x' } },
        { path: 'label', metadata: { k: 'v' }, replace: true },
      ],
    });
    assert.equal(spec.status, 200, spec.text);
    assert.deepEqual(spec.body, { version: 5, fields: { id: { unit: 'count', note: 'x' }, label: { k: 'v' } } });
    // The namespace-mode client reads the schema from the data itself.
    const schema = await (await ns.openTable('fieldmeta')).schema();
    assert.equal(schema.fields.find((f) => f.name === 'id')?.metadata.get('unit'), 'count');
    assert.equal(schema.fields.find((f) => f.name === 'id')?.metadata.get('owner'), undefined);
    expectProblem(
      await tenant.api.post(path('fieldmeta', 'update_field_metadata'), { updates: [{ path: 'nope', metadata: { a: 'b' } }] }),
      404,
      12,
    );
    expectProblem(await tenant.api.post(path('fieldmeta', 'update_field_metadata'), { updates: [] }), 400, 13);
    expectProblem(
      await tenant.reader.post(path('fieldmeta', 'update_field_metadata'), { updates: [{ path: 'id', metadata: {} }] }),
      403,
      15,
    );

    // Schema metadata: the engine binding cannot replace it.
    expectProblem(await tenant.api.post(path('fieldmeta', 'schema_metadata/update'), { owner: 'a' }), 406, 0);
    expectProblem(await tenant.api.post(path('missing_table', 'schema_metadata/update'), { owner: 'a' }), 404, 4);
  });

  it('analyze_plan runs the query and answers the plan with metrics as a JSON string (no server paths); create_scalar_index builds scalar indexes only', async () => {
    const t = await threeVersions('plans');
    const plan = await t.query().where('id < 4').analyzePlan();
    assert.match(plan, /AnalyzeExec/);
    assert.match(plan, /output_rows=4/);
    assert.ok(!plan.includes(gw.dataDir), plan);
    const spec = await tenant.api.post(path('plans', 'analyze_plan'), { k: 10, filter: 'id >= 5', vector: null });
    assert.equal(spec.status, 200, spec.text);
    assert.equal(typeof spec.body, 'string');
    assert.match(spec.body, /output_rows=1/);

    assert.equal(
      (await tenant.api.post(path('plans', 'create_scalar_index'), { column: 'id', index_type: 'BTREE', name: 'id_btree' })).status,
      200,
    );
    const indexes = await tenant.api.post(path('plans', 'index/list'), {});
    assert.deepEqual(
      indexes.body.indexes.map((i: { index_name: string; index_type: string }) => [i.index_name, i.index_type]),
      [['id_btree', 'BTREE']],
    );
    expectProblem(await tenant.api.post(path('plans', 'create_scalar_index'), { column: 'id', index_type: 'IVF_PQ' }), 400, 13);
    expectProblem(await tenant.reader.post(path('plans', 'create_scalar_index'), { column: 'label', index_type: 'BITMAP' }), 403, 15);
  });
});
