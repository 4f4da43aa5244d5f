import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, it } from 'node:test';
import * as lancedb from '@lancedb/lancedb';
import * as arrow from 'apache-arrow';
import { WriteBudget } from '../src/modules/data/writes/write-budget';
import { expectProblem } from './helpers/assertions';
import { forEachCatalog, idPath, newTenant, operator, Reply, startGateway, Tenant, TestGateway } from './helpers/gateway';

/**
 * Multipart writes (issue 13): `multipart_write/create|complete|abort` and inserts carrying `upload_id` and
 * `upload_part_id`, as the official remote client sends them (phalanx-version 0.4.0): parts staged on the table's
 * storage, one commit at complete, abort leaves nothing.
 */
// The client makes at most one part per compute thread: two, whatever this machine has.
process.env.LANCE_CPU_THREADS ??= '2';

forEachCatalog('multipart writes', (kind) => {
  let gw: TestGateway;
  let tenant: Tenant;
  let remote: lancedb.Connection;

  const rows = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ id: from + i, label: `row-${from + i}` }));
  const path = (table: string, op: string) => `/v1/table/${idPath(table)}/${op}`;
  const ipc = (from: number, n: number, extra = false): Buffer => {
    const cols: Record<string, arrow.Vector> = {
      id: arrow.vectorFromArray(
        Array.from({ length: n }, (_, i) => from + i),
        new arrow.Float64(),
      ),
      label: arrow.vectorFromArray(
        Array.from({ length: n }, (_, i) => `row-${from + i}`),
        new arrow.Utf8(),
      ),
    };
    if (extra)
      cols.other = arrow.vectorFromArray(
        Array.from({ length: n }, () => 1),
        new arrow.Int32(),
      );
    return Buffer.from(arrow.tableToIPC(new arrow.Table(cols), 'stream'));
  };
  const send = async (p: string, body?: Buffer): Promise<Reply> => {
    const r = await fetch(gw.url + p, {
      method: 'POST',
      headers: { ...tenant.api.headers, ...(body ? { 'content-type': 'application/vnd.apache.arrow.stream' } : {}) },
      body,
    });
    const text = await r.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: r.status, headers: r.headers, body: parsed, text };
  };
  const versionOf = async (table: string) => (await tenant.api.post(path(table, 'describe'), {})).body.version as number;
  const count = async (table: string) => (await tenant.api.post(path(table, 'count_rows'), {})).body as number;
  const stagedFolders = async (table: string) => {
    const d = await tenant.api.post(path(table, 'describe'), {});
    return gw.config.storageRoot && !String(d.body.location).includes('://') ? String(d.body.location) : undefined;
  };

  before(async () => {
    gw = await startGateway(kind);
    tenant = await newTenant(gw);
    remote = await lancedb.connect(`db://${tenant.name}`, { apiKey: tenant.writeKey, hostOverride: gw.url });
  });
  after(async () => {
    remote?.close();
    await gw.close();
  });

  it('raw HTTP: parts are staged (nothing visible), complete commits them all in one version, a repeated complete commits nothing', async () => {
    await remote.createTable('mp', rows(0, 2));
    const before = await versionOf('mp');
    const created = await tenant.api.post(path('mp', 'multipart_write/create'), {});
    assert.equal(created.status, 200, created.text);
    const upload: string = created.body.upload_id;
    assert.ok(upload);
    for (const [i, from] of [
      [1, 100],
      [2, 200],
      [3, 300],
    ]) {
      const r = await send(`${path('mp', 'insert')}?upload_id=${upload}&upload_part_id=${randomUUID()}`, ipc(from, 10 * i));
      assert.equal(r.status, 200, r.text);
    }
    // A retried part (same upload_part_id) replaces itself, it does not add rows twice.
    const part = randomUUID();
    assert.equal((await send(`${path('mp', 'insert')}?upload_id=${upload}&upload_part_id=${part}`, ipc(400, 5))).status, 200);
    assert.equal((await send(`${path('mp', 'insert')}?upload_id=${upload}&upload_part_id=${part}`, ipc(400, 5))).status, 200);
    // Nothing is committed before complete.
    assert.equal(await versionOf('mp'), before);
    assert.equal(await count('mp'), 2);

    const done = await tenant.api.post(`${path('mp', 'multipart_write/complete')}?upload_id=${upload}`, {});
    assert.equal(done.status, 200, done.text);
    assert.equal(done.body.version, before + 1, 'one commit for every part');
    assert.equal(done.body.num_inserted_rows, 65);
    assert.equal(await count('mp'), 2 + 65);
    const again = await tenant.api.post(`${path('mp', 'multipart_write/complete')}?upload_id=${upload}`, {});
    assert.equal(again.status, 200, again.text);
    assert.equal(again.body.version, before + 1);
    assert.equal(await count('mp'), 67);
    const versions = await tenant.api.post(path('mp', 'version/list'), {});
    assert.equal(versions.body.versions.length, before + 1);
  });

  it('a multipart write to a branch commits on that branch only', async () => {
    await remote.createTable('mp_branch', rows(0, 2));
    assert.equal((await tenant.api.post(path('mp_branch', 'branches/create'), { name: 'dev' })).status, 200);
    const upload: string = (await tenant.api.post(`${path('mp_branch', 'multipart_write/create')}?branch=dev`, {})).body.upload_id;
    assert.equal((await send(`${path('mp_branch', 'insert')}?branch=dev&upload_id=${upload}&upload_part_id=a`, ipc(10, 4))).status, 200);
    const done = await tenant.api.post(`${path('mp_branch', 'multipart_write/complete')}?branch=dev&upload_id=${upload}`, {});
    assert.equal(done.status, 200, done.text);
    assert.equal((await tenant.api.post(path('mp_branch', 'count_rows'), { branch: 'dev' })).body, 6);
    assert.equal(await count('mp_branch'), 2);
  });

  it('an upload belongs to the branch it was created for: complete naming another branch (or none) is refused, nothing committed', async () => {
    await remote.createTable('mp_bound', rows(0, 2));
    assert.equal((await tenant.api.post(path('mp_bound', 'branches/create'), { name: 'dev' })).status, 200);
    const upload: string = (await tenant.api.post(`${path('mp_bound', 'multipart_write/create')}?branch=dev`, {})).body.upload_id;
    assert.equal((await send(`${path('mp_bound', 'insert')}?branch=dev&upload_id=${upload}&upload_part_id=a`, ipc(10, 4))).status, 200);
    const before = await versionOf('mp_bound');
    const onMain = await tenant.api.post(`${path('mp_bound', 'multipart_write/complete')}?upload_id=${upload}`, {});
    expectProblem(onMain, 400, 13);
    assert.match(onMain.body.detail, /not created for the main branch/);
    expectProblem(await tenant.api.post(`${path('mp_bound', 'multipart_write/complete')}?branch=other&upload_id=${upload}`, {}), 400, 13);
    assert.equal(await versionOf('mp_bound'), before, 'main unchanged');
    assert.equal(await count('mp_bound'), 2);
    // A main upload completed on a branch is refused the same way.
    const mainUpload: string = (await tenant.api.post(path('mp_bound', 'multipart_write/create'), {})).body.upload_id;
    expectProblem(await tenant.api.post(`${path('mp_bound', 'multipart_write/complete')}?branch=dev&upload_id=${mainUpload}`, {}), 400, 13);
    // With its own branch it commits there.
    assert.equal((await tenant.api.post(`${path('mp_bound', 'multipart_write/complete')}?branch=dev&upload_id=${upload}`, {})).status, 200);
    assert.equal((await tenant.api.post(path('mp_bound', 'count_rows'), { branch: 'dev' })).body, 6);
    assert.equal(await count('mp_bound'), 2);
  });

  it('abort leaves nothing: no rows, no version, no staged files', async () => {
    await remote.createTable('mp_abort', rows(0, 3));
    const before = await versionOf('mp_abort');
    const upload: string = (await tenant.api.post(path('mp_abort', 'multipart_write/create'), {})).body.upload_id;
    assert.equal((await send(`${path('mp_abort', 'insert')}?upload_id=${upload}&upload_part_id=p1`, ipc(10, 7))).status, 200);
    const location = await stagedFolders('mp_abort');
    const fs = await import('node:fs');
    if (location) assert.ok(fs.existsSync(`${location}/_uploads/${upload}`), "the part is staged in the table's folder");
    const aborted = await tenant.api.post(`${path('mp_abort', 'multipart_write/abort')}?upload_id=${upload}`, {});
    assert.equal(aborted.status, 200, aborted.text);
    if (location) assert.ok(!fs.existsSync(`${location}/_uploads/${upload}`), 'the staged part is gone');
    const completed = await tenant.api.post(`${path('mp_abort', 'multipart_write/complete')}?upload_id=${upload}`, {});
    assert.equal(completed.status, 200);
    assert.equal(completed.body.version, before);
    assert.equal(await count('mp_abort'), 3);
    assert.equal(await versionOf('mp_abort'), before);
  });

  it('refuses what cannot be one commit: parts of different schemas (400 code 20), bad ids, overwrite, a reader, an unknown table or branch', async () => {
    await remote.createTable('mp_bad', rows(0, 1));
    const upload: string = (await tenant.api.post(path('mp_bad', 'multipart_write/create'), {})).body.upload_id;
    assert.equal((await send(`${path('mp_bad', 'insert')}?upload_id=${upload}&upload_part_id=a`, ipc(1, 2))).status, 200);
    assert.equal((await send(`${path('mp_bad', 'insert')}?upload_id=${upload}&upload_part_id=b`, ipc(3, 2, true))).status, 200);
    expectProblem(await tenant.api.post(`${path('mp_bad', 'multipart_write/complete')}?upload_id=${upload}`, {}), 400, 20);
    assert.equal(await count('mp_bad'), 1);
    assert.equal((await tenant.api.post(`${path('mp_bad', 'multipart_write/abort')}?upload_id=${upload}`, {})).status, 200);

    expectProblem(await send(`${path('mp_bad', 'insert')}?upload_id=../../x&upload_part_id=a`, ipc(1, 1)), 400, 13);
    expectProblem(await send(`${path('mp_bad', 'insert')}?upload_id=${upload}&upload_part_id=../a`, ipc(1, 1)), 400, 13);
    expectProblem(await send(`${path('mp_bad', 'insert')}?upload_id=${upload}`, ipc(1, 1)), 400, 13);
    expectProblem(await send(`${path('mp_bad', 'insert')}?mode=overwrite&upload_id=${upload}&upload_part_id=a`, ipc(1, 1)), 400, 13);
    expectProblem(await tenant.api.post(`${path('mp_bad', 'multipart_write/complete')}`, {}), 400, 13);
    expectProblem(await tenant.api.post(`${path('mp_bad', 'multipart_write/complete')}?upload_id=nope`, {}), 400, 13);
    expectProblem(await tenant.reader.post(path('mp_bad', 'multipart_write/create'), {}), 403, 15);
    expectProblem(await tenant.api.post(path('no_such', 'multipart_write/create'), {}), 404, 4);
    expectProblem(await tenant.api.post(`${path('mp_bad', 'multipart_write/create')}?branch=ghost`, {}), 404, 22);
    assert.equal(await count('mp_bad'), 1);
  });

  it('official client: an add of over a million rows is sent as a multipart write (phalanx-version 0.4.0) and lands in one commit', async () => {
    // The client splits an add into parts by ~1M rows (or 2 GB), at most one per compute thread.
    const ids = (from: number, n: number) => arrow.tableFromArrays({ id: Float64Array.from({ length: n }, (_, i) => from + i) });
    const t = await remote.createTable('mp_client', ids(0, 1));
    const probe = await tenant.api.post(path('mp_client', 'describe'), {});
    assert.equal(probe.headers.get('phalanx-version'), '0.4.0');
    const before = await t.version();
    await t.add(ids(1, 1_500_000));
    assert.equal(await t.countRows(), 1_500_001);
    assert.equal(await t.version(), before + 1, 'one commit');
    const audit = await operator(gw).get(`/admin/v1/databases/${tenant.name}/audit?limit=1000`);
    const events = audit.body.events as Array<{ action: string; target: string; details?: Record<string, unknown> }>;
    const inserts = events.filter((e) => e.action === 'table.insert' && e.target === 'mp_client');
    assert.equal(inserts.length, 1, JSON.stringify(inserts));
    assert.ok(inserts[0].details?.upload_id, `the add went through multipart_write/complete: ${JSON.stringify(inserts[0])}`);
    assert.ok(Number(inserts[0].details?.parts) >= 1, JSON.stringify(inserts[0]));
    assert.equal(inserts[0].details?.num_rows, 1_500_000);
    assert.equal(await t.countRows('id >= 1499990'), 11);
  });

  it('parts and the commit count against the write budget: 503 while other writes hold it, nothing staged or committed, then it goes through', async () => {
    const small = await startGateway(kind, { WRITE_MEMORY_BUDGET_BYTES: String(1024 * 1024), WRITE_BUDGET_WAIT_MS: '0' });
    try {
      const st = await newTenant(small);
      const budget = small.app.get(WriteBudget);
      const post = async (p: string, body?: Buffer) => {
        const r = await fetch(small.url + p, {
          method: 'POST',
          headers: { ...st.api.headers, ...(body ? { 'content-type': 'application/vnd.apache.arrow.stream' } : {}) },
          body,
        });
        return { status: r.status, text: await r.text() };
      };
      const p = (op: string) => `/v1/table/${idPath('b')}/${op}`;
      assert.equal((await post(p('create'), ipc(0, 1))).status, 200);
      const upload = JSON.parse((await post(p('multipart_write/create'))).text).upload_id as string;
      assert.equal((await post(`${p('insert')}?upload_id=${upload}&upload_part_id=a`, ipc(10_000, 8000))).status, 200);

      // Other writes hold nearly all of the budget: a part is refused (nothing staged), and so is the commit.
      const others = await budget.reserve(1000 * 1024);
      try {
        const part = await post(`${p('insert')}?upload_id=${upload}&upload_part_id=b`, ipc(20_000, 8000));
        assert.equal(part.status, 503, part.text);
        const complete = await post(`${p('multipart_write/complete')}?upload_id=${upload}`);
        assert.equal(complete.status, 503, complete.text);
        assert.equal((await st.api.post(p('count_rows'), {})).body, 1, 'nothing committed');
      } finally {
        others.release();
      }
      // Once the budget is free, the same upload (part a only: b was refused) commits once.
      const done = await post(`${p('multipart_write/complete')}?upload_id=${upload}`);
      assert.equal(done.status, 200, done.text);
      assert.equal(JSON.parse(done.text).num_inserted_rows, 8000);
      assert.equal((await st.api.post(p('count_rows'), {})).body, 8001);
      assert.equal(budget.inFlightBytes, 0, 'every reservation released');
    } finally {
      await small.close();
    }
  });
});
