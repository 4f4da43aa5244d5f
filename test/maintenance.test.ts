import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, it } from 'node:test';
import * as lancedb from '@lancedb/lancedb';
import { UnitOfWork } from '../src/platform/db/unit-of-work';
import { TableStorage } from '../src/engine/storage/table-storage.service';
import { expectProblem } from './helpers/assertions';
import {
  eventually,
  forEachCatalog,
  idPath,
  newTenant,
  operator,
  pgUrlFor,
  startGateway,
  Tenant,
  TEST_STORAGE,
  TestGateway,
} from './helpers/gateway';
import { runAdmin } from './helpers/admin-cli';

/**
 * Table maintenance (issue 32, docs/maintenance.md): the gateway compacts, optimizes the indices of and cleans
 * up its tables by itself, through jobs of the jobs system. Short thresholds through the environment; everything else
 * as a tenant sees it, through the official client in both modes.
 */

const DIM = 16;
const vec = (i: number) => Array.from({ length: DIM }, (_, d) => Math.sin(i * 0.37 + d * 1.3));
const rows = (from: number, n: number) =>
  Array.from({ length: n }, (_, i) => ({ id: from + i, label: `row-${from + i}`, vector: vec(from + i) }));

const remote = (gw: { url: string }, t: Tenant, key = t.writeKey) =>
  lancedb.connect(`db://${t.name}`, { apiKey: key, hostOverride: gw.url });
const namespaceMode = (gw: { url: string }, t: Tenant, key = t.writeKey) =>
  lancedb.connectNamespace('rest', { uri: gw.url, headers: { 'x-api-key': key, 'x-service-database': t.name } });

interface Job {
  job_id: string;
  job_type: string;
  table_id: string[];
  state: string;
}

async function jobsOf(t: Tenant, table: string): Promise<Job[]> {
  const out: Job[] = [];
  let token: string | undefined;
  do {
    const r = await t.api.post('/v1/jobs/list', token ? { page_token: token } : {});
    assert.equal(r.status, 200, r.text);
    out.push(...(r.body.jobs as Job[]).filter((j) => j.table_id.join('$') === table));
    token = r.body.page_token;
  } while (token);
  return out;
}

async function describeJob(t: Tenant, jobId: string) {
  const r = await t.api.post('/v1/jobs/describe', { job_id: jobId });
  assert.equal(r.status, 200, r.text);
  return r.body as { job_state: string; job_type: string; result?: Record<string, any>; failure?: { message: string } };
}

/** Waits for a job to end; answers its description (a failed job fails the test with its message). */
async function finished(t: Tenant, jobId: string) {
  const d = await eventually(
    async () => {
      const x = await describeJob(t, jobId);
      return x.job_state !== 'IN_PROGRESS' && x;
    },
    1200,
    100,
  );
  assert.equal(d.job_state, 'DONE', JSON.stringify(d));
  return d;
}

/** Bytes of every object under the table's location on its store (all versions, indices, deletion files). */
async function storeBytes(gw: TestGateway, t: Tenant, table: string): Promise<number> {
  const rows = await gw.app
    .get(UnitOfWork)
    .db.$queryRawUnsafe<{ location: string }[]>(
      `SELECT t.location FROM tables t JOIN databases d ON d.id = t.database_id WHERE d.name = $1 AND t.name = $2`,
      t.name,
      table,
    );
  const files = await gw.app.get(TableStorage).listFiles(rows[0].location);
  return files.reduce((n, f) => n + f.size, 0);
}

forEachCatalog('table maintenance', (kind) => {
  let gw: TestGateway;
  let tenant: Tenant;

  before(async () => {
    gw = await startGateway(kind, {
      JOBS_POLL_INTERVAL_MS: '100',
      MAINTENANCE_DELAY_MS: '2500',
      MAINTENANCE_COMPACT_MIN_FRAGMENTS: '8',
      MAINTENANCE_SWEEP_INTERVAL_SECONDS: '0',
    });
    tenant = await newTenant(gw);
  });
  after(async () => {
    await gw?.close();
  });

  it('a burst of 300 small adds through the remote client is compacted by itself, and queries read it as a freshly written table', async () => {
    // A database of its own whose policy keeps no old version (the server's default keeps a day's).
    const own = await newTenant(gw);
    assert.equal(
      (await operator(gw).request('PUT', `/admin/v1/databases/${own.name}/maintenance`, { cleanup_retention_seconds: 0 })).status,
      200,
    );
    const db = await remote(gw, own);
    const base = rows(0, 10_000);
    const t = await db.createTable('burst', base);
    const started = Date.now();
    for (let i = 0; i < 300; i++) await t.add(rows(10_000 + i * 20, 20));
    const burst = Date.now() - started;
    const all = [...base, ...rows(10_000, 6000)];
    assert.equal(await t.countRows(), all.length);
    // Within a bounded poll, the table's fragments are merged (no one asked for it).
    // Small: fewer small fragments than the compaction threshold (8 here) are left as they are.
    const stats = await eventually(
      async () => {
        const s = await t.stats();
        return s.fragmentStats.numFragments <= 8 && (await t.listVersions()).length <= 10 && s;
      },
      1200,
      100,
    );
    assert.ok(stats.fragmentStats.numFragments <= 8, `fragments: ${stats.fragmentStats.numFragments}`);
    assert.equal(await t.countRows(), all.length);
    const jobs = await jobsOf(own, 'burst');
    assert.ok(jobs.length >= 1 && jobs.every((j) => j.job_type === 'maintenance'), JSON.stringify(jobs));
    // Debounced: one job per delay window (2.5 s) at most while the burst lasts, far fewer than commits.
    assert.ok(jobs.length <= Math.ceil(burst / 2500) + 2 && jobs.length < 150, `${jobs.length} jobs for 301 commits in ${burst} ms`);
    const done = await Promise.all(jobs.map((j) => describeJob(own, j.job_id)));
    assert.ok(
      done.some((d) => d.result?.outcome === 'done' && (d.result.ran as string[]).includes('compact') && d.result.fragments_merged > 1),
      JSON.stringify(done.map((d) => d.result)),
    );

    // A query reads the compacted table as it reads one written in one go: the same rows for the same vectors.
    // (How fast it answers is the benchmark's concern, docs/performance.md, not a timed assertion here.)
    const fresh = await db.createTable('burst_fresh', all);
    const ids = async (tbl: lancedb.Table, i: number) =>
      (
        await tbl
          .search(vec(i * 7 + 3))
          .limit(10)
          .select(['id'])
          .toArray()
      ).map((r) => Number(r.id));
    for (let i = 0; i < 5; i++) assert.deepEqual(await ids(t, i), await ids(fresh, i));
    const freshStats = await fresh.stats();
    assert.ok(
      stats.fragmentStats.numFragments <= freshStats.fragmentStats.numFragments + 8,
      `${stats.fragmentStats.numFragments} vs ${freshStats.fragmentStats.numFragments}`,
    );
  });

  it('concurrent commits to one table make one queued job', async () => {
    const db = await remote(gw, tenant);
    const t = await db.createTable('debounce', rows(0, 10));
    const started = Date.now();
    await Promise.all(Array.from({ length: 12 }, (_, i) => t.add(rows(100 + i * 5, 5))));
    const burst = Date.now() - started;
    const jobs = await jobsOf(tenant, 'debounce');
    // One job per delay window (2.5 s here) at most while the burst lasts: one when it fits in a window.
    assert.ok(jobs.length >= 1 && jobs.length <= Math.ceil(burst / 2500) + 1, `${jobs.length} jobs for a burst of ${burst} ms`);
    if (burst < 2500) assert.equal(jobs.length, 1, JSON.stringify(jobs));
    const d = await finished(tenant, jobs[jobs.length - 1].job_id);
    assert.equal(d.job_type, 'maintenance');
    assert.equal(await t.countRows(), 70);
  });

  it('rows added after an IVF_PQ index end up indexed', async () => {
    const db = await remote(gw, tenant);
    const t = await db.createTable('indexed', rows(0, 3000));
    await t.createIndex('vector', { config: lancedb.Index.ivfPq({ numPartitions: 4, numSubVectors: 4 }) });
    const name = (await t.listIndices())[0].name;
    for (let i = 0; i < 5; i++) await t.add(rows(3000 + i * 40, 40));
    assert.ok(((await t.indexStats(name))?.numUnindexedRows ?? 0) > 0, 'the new rows start unindexed');
    const s = await eventually(
      async () => {
        const x = await t.indexStats(name);
        return x && x.numUnindexedRows === 0 && x;
      },
      1200,
      100,
    );
    assert.equal(s.numIndexedRows, 3200);
    // fastSearch (indexed rows only) finds a row added after the index.
    const hit = await t.search(vec(3150)).where('id = 3150').fastSearch().limit(1).toArray();
    assert.equal(hit.length, 1);
    assert.equal(hit[0].id, 3150);
  });

  it('overwrites and a delete: a cleanup brings the bytes on the store within 1.5x of the live data; tagged versions survive', async () => {
    const db = await remote(gw, tenant);
    const t = await db.createTable('churn', rows(0, 4000));
    const tags = await t.tags();
    await tags.create('first', 1);
    for (let i = 1; i <= 5; i++) await t.add(rows(0, 4000), { mode: 'overwrite' });
    const del = await t.delete('id >= 2000');
    assert.equal(await t.countRows(), 2000, JSON.stringify({ del, version: await t.version(), jobs: await jobsOf(tenant, 'churn') }));
    const before = await storeBytes(gw, tenant, 'churn');

    // A read key may not run maintenance.
    const refused = await tenant.reader.post(`/v1/table/${idPath('churn')}/maintenance/run`, { type: 'cleanup', dry_run: true });
    expectProblem(refused, 403, 15);

    // The dry run says what would go, and removes nothing.
    const dry = await tenant.api.post(`/v1/table/${idPath('churn')}/maintenance/run`, {
      type: 'cleanup',
      dry_run: true,
      retention_seconds: 0,
    });
    assert.equal(dry.status, 200, dry.text);
    assert.equal(dry.body.dry_run, true);
    assert.equal(dry.body.cleanup_allowed, true);
    assert.deepEqual(dry.body.tagged_versions, [1]);
    // Only versions older than the oldest tagged one may go (the engine never removes a tagged version): none here.
    assert.equal(dry.body.versions_to_remove.length, 0);
    assert.equal(await storeBytes(gw, tenant, 'churn'), before);

    // Without the tag, the old versions go.
    await tags.delete('first');
    await tags.create('kept', 4);
    const dry2 = await tenant.api.post(`/v1/table/${idPath('churn')}/maintenance/run`, {
      type: 'cleanup',
      dry_run: true,
      retention_seconds: 0,
    });
    assert.deepEqual(
      dry2.body.versions_to_remove.map((v: { version: number }) => v.version),
      [1, 2, 3],
    );
    assert.ok(dry2.body.reclaimable_bytes_at_most > 0);
    const run = await tenant.api.post(`/v1/table/${idPath('churn')}/maintenance/run`, { type: 'cleanup', retention_seconds: 0 });
    assert.equal(run.status, 200, run.text);
    const d = await finished(tenant, run.body.job_id);
    assert.equal(d.job_type, 'cleanup');
    assert.ok(d.result!.versions_removed >= 3, JSON.stringify(d.result));
    assert.ok(d.result!.bytes_reclaimed > 0);
    // The tagged version survives; then it goes too once untagged.
    // (A connection of its own: the remote client shares a checkout among the handles of one connection.)
    const v4 = await (await remote(gw, tenant)).openTable('churn');
    await v4.checkout('kept');
    assert.equal(await v4.countRows(), 4000);
    await tags.delete('kept');
    const again = await tenant.api.post(`/v1/table/${idPath('churn')}/maintenance/run`, { type: 'cleanup', retention_seconds: 0 });
    await finished(tenant, again.body.job_id);

    const live = (await t.stats()).totalBytes;
    const after = await storeBytes(gw, tenant, 'churn');
    assert.ok(after < before, `${after} >= ${before}`);
    assert.ok(after <= 1.5 * live, `on the store ${after} bytes, live ${live}`);
    assert.equal(await t.countRows(), 2000);
    const versions = await t.listVersions();
    assert.ok(versions.length <= 3, JSON.stringify(versions.map((v) => v.version)));
  });

  it('inserts from both client modes during compaction and cleanup are all there afterwards', async () => {
    const db = await remote(gw, tenant);
    const t = await db.createTable('concurrent', rows(0, 100));
    for (let i = 0; i < 20; i++) await t.add(rows(1000 + i * 10, 10));
    const ns = await namespaceMode(gw, tenant);
    const nt = await ns.openTable('concurrent');
    let n = 100 + 200;
    const jobs: string[] = [];
    // A failure says which write it was (the CI log keeps only the message).
    const step = async (what: string, write: () => Promise<unknown>) => {
      try {
        await write();
      } catch (err) {
        throw new Error(`${what} failed: ${(err as Error).message}`, { cause: err });
      }
    };
    const writers = (async () => {
      for (let i = 0; i < 15; i++) {
        await step(`remote add ${i}`, () => t.add(rows(5000 + i * 10, 10)));
        await step(`namespace-mode add ${i}`, () => nt.add(rows(9000 + i * 10, 10)));
        n += 20;
      }
    })();
    for (let i = 0; i < 3; i++) {
      const r = await tenant.api.post(`/v1/table/${idPath('concurrent')}/maintenance/run`, { type: 'all', retention_seconds: 0 });
      assert.equal(r.status, 200, r.text);
      jobs.push(r.body.job_id);
      await new Promise((res) => setTimeout(res, 150));
    }
    await writers;
    for (const j of jobs) await finished(tenant, j);
    const last = await tenant.api.post(`/v1/table/${idPath('concurrent')}/maintenance/run`, { type: 'cleanup', retention_seconds: 0 });
    assert.equal(last.status, 200, last.text);
    await finished(tenant, last.body.job_id);
    const results = await Promise.all([...jobs, last.body.job_id].map(async (j) => (await describeJob(tenant, j)).result));
    assert.equal(await t.countRows(), n, `jobs: ${JSON.stringify(results)}`);
    const ids = new Set(((await t.query().select(['id']).limit(100_000).toArray()) as Array<{ id: number }>).map((r) => Number(r.id)));
    for (const i of [0, 1005, 5145, 9145, 9000]) assert.ok(ids.has(i), `row ${i} lost`);
    assert.equal(ids.size, n);
    ns.close?.();
  });

  it('policies: server, database (operator), namespace and table levels, each setting with its source; a disabled table is left alone', async () => {
    const op = operator(gw);
    const set = await op.request('PUT', `/admin/v1/databases/${tenant.name}/maintenance`, { compact_min_fragments: 20, max_concurrent: 2 });
    assert.equal(set.status, 200, set.text);
    const got = await op.get(`/admin/v1/databases/${tenant.name}/maintenance`);
    assert.deepEqual(got.body.maintenance, { compact_min_fragments: 20, max_concurrent: 2 });
    assert.equal(got.body.server_defaults.compact_min_fragments, 8);
    const bad = await op.request('PUT', `/admin/v1/databases/${tenant.name}/maintenance`, { compact_min_fragments: 1 });
    expectProblem(bad, 400, 13);
    const notOperator = await tenant.api.request('PUT', `/admin/v1/databases/${tenant.name}/maintenance`, {});
    assert.ok(notOperator.status === 401 || notOperator.status === 403, notOperator.text);

    assert.equal(
      (await tenant.api.post(`/v1/namespace/${idPath('pol')}/create`, { properties: { 'maintenance.cleanup_retention_seconds': '3600' } }))
        .status,
      200,
    );
    const db = await remote(gw, tenant);
    await db.createTable('quiet', rows(0, 5));
    const create = await tenant.api.post(`/v1/table/${idPath('pol', 'off')}/declare`, { properties: { 'maintenance.enabled': 'false' } });
    assert.ok(create.status === 200, create.text);
    const p = await tenant.reader.get(`/v1/table/${idPath('pol', 'off')}/maintenance`);
    assert.equal(p.status, 200, p.text);
    assert.deepEqual(p.body.policy.enabled, { value: false, source: 'table' });
    assert.deepEqual(p.body.policy.cleanup_retention_seconds, { value: 3600, source: 'namespace' });
    assert.deepEqual(p.body.policy.compact_min_fragments, { value: 20, source: 'database' });
    assert.deepEqual(p.body.policy.index_min_unindexed_rows, { value: 1, source: 'server' });
    assert.deepEqual(p.body.policy.max_concurrent, { value: 2, source: 'database' });

    // A database that disables maintenance: its tables take small writes and stay as written.
    await op.request('PUT', `/admin/v1/databases/${tenant.name}/maintenance`, { enabled: false });
    const quiet = await db.openTable('quiet');
    for (let i = 0; i < 10; i++) await quiet.add(rows(100 + i, 1));
    // No automatic job is queued for it; a run asked for still runs.
    assert.deepEqual(await jobsOf(tenant, 'quiet'), []);
    assert.equal((await quiet.stats()).fragmentStats.numFragments, 11);
    const forced = await tenant.api.post(`/v1/table/${idPath('quiet')}/maintenance/run`, { type: 'compact' });
    assert.equal((await finished(tenant, forced.body.job_id)).result!.fragments_after, 1);
    const reset = await op.request('PUT', `/admin/v1/databases/${tenant.name}/maintenance`, {});
    assert.equal(reset.status, 200);
    assert.equal(reset.body.maintenance, null);
  });
  it('runs are audited with the job type; bad input is a 400', async () => {
    const db = await remote(gw, tenant);
    await db.createTable('audited', rows(0, 10));
    const r = await tenant.api.post(`/v1/table/${idPath('audited')}/maintenance/run`, { type: 'compact' });
    assert.equal(r.status, 200, r.text);
    const d = await finished(tenant, r.body.job_id);
    assert.equal(d.job_type, 'compact');
    const events = (await operator(gw).get(`/admin/v1/databases/${tenant.name}/audit?limit=1000`)).body.events as Array<{
      action: string;
      details: Record<string, unknown>;
    }>;
    assert.ok(
      events.some((e) => e.action === 'table.maintenance' && e.details.job_type === 'compact'),
      JSON.stringify(events.map((e) => e.action)),
    );
    assert.ok(
      events.some((e) => e.action === 'job.compact'),
      JSON.stringify(events.map((e) => e.action)),
    );
    expectProblem(await tenant.api.post(`/v1/table/${idPath('audited')}/maintenance/run`, { type: 'vacuum' }), 400, 13);
    expectProblem(await tenant.api.post(`/v1/table/${idPath('audited')}/maintenance/run`, { type: 'compact', dry_run: true }), 400, 13);
    expectProblem(await tenant.api.post(`/v1/table/${idPath('nope')}/maintenance/run`, { type: 'compact' }), 404, 4);
  });
  it("namespace-mode writers are maintained too: a describe with a write key queues the table's job", async () => {
    const ns = await namespaceMode(gw, tenant);
    const t = await ns.createTable('direct', rows(0, 10));
    for (let i = 0; i < 12; i++) await t.add(rows(100 + i * 5, 5));
    assert.ok((await t.stats()).fragmentStats.numFragments >= 13);
    // Each poll opens the table afresh (DescribeTable with the write key), as a namespace-mode writer does.
    await eventually(
      async () => {
        const c = await namespaceMode(gw, tenant);
        try {
          const x = await c.openTable('direct');
          return (await x.stats()).fragmentStats.numFragments <= 2;
        } finally {
          c.close();
        }
      },
      600,
      100,
    );
    const jobs = await jobsOf(tenant, 'direct');
    assert.ok(jobs.some((j) => j.job_type === 'maintenance'));
    const c = await namespaceMode(gw, tenant);
    assert.equal(await (await c.openTable('direct')).countRows(), 70);
    c.close();
    ns.close();
  });

  it('a namespace-mode describe of a table without data queues no job (a fleet of declared tables costs no claims)', async () => {
    const own = await newTenant(gw);
    assert.equal((await own.api.post(`/v1/table/${idPath('empty')}/declare`, {})).status, 200);
    const ns = await namespaceMode(gw, own);
    await ns.createTable('full', rows(0, 10));
    ns.close();
    // Both described as a namespace-mode writer does (the spec dialect, the write key), a few times.
    for (let i = 0; i < 3; i++)
      for (const name of ['empty', 'full']) assert.equal((await own.api.post(`/v1/table/${idPath(name)}/describe`, {})).status, 200);
    await eventually(async () => (await jobsOf(own, 'full')).some((j) => j.job_type === 'maintenance'), 100, 100);
    assert.deepEqual(await jobsOf(own, 'empty'), []);
  });

  it("managed_versioning: a cleanup removes the catalog's version rows with their manifests; every version listed can be read", async () => {
    const made = await operator(gw).post('/admin/v1/databases', { name: `mvm_${Date.now().toString(36)}`, managed_versioning: true });
    assert.equal(made.status, 201, made.text);
    const name = made.body.name as string;
    const key = (await operator(gw).post(`/admin/v1/databases/${name}/api-keys`, { role: 'write' })).body.api_key as string;
    const mt: Tenant = { ...tenant, name, writeKey: key, api: tenant.api.with({ 'x-api-key': key, 'x-service-database': name }) };
    const ns = await namespaceMode(gw, mt);
    const t = await ns.createTable('mv', rows(0, 20));
    for (let i = 0; i < 6; i++) await t.add(rows(100 + i * 5, 5));
    const listed = async () => {
      const r = await mt.api.post(`/v1/table/${idPath('mv')}/version/list`, null);
      assert.equal(r.status, 200, r.text);
      return (r.body.versions as Array<{ version: number }>).map((v) => v.version).sort((a, b) => a - b);
    };
    assert.deepEqual(await listed(), [1, 2, 3, 4, 5, 6, 7]);
    const run = await mt.api.post(`/v1/table/${idPath('mv')}/maintenance/run`, { type: 'cleanup', retention_seconds: 0 });
    assert.equal(run.status, 200, run.text);
    const d = await finished(mt, run.body.job_id);
    assert.ok(d.result!.versions_removed >= 6, JSON.stringify(d.result));
    const after = await listed();
    assert.ok(after.length <= 3 && !after.includes(1), JSON.stringify(after));
    for (const v of after) {
      const c = await namespaceMode(gw, mt);
      const h = await c.openTable('mv');
      await h.checkout(v);
      assert.ok((await h.countRows()) >= 20);
      c.close();
    }
    // The namespace-mode client keeps writing on top.
    await t.checkoutLatest();
    await t.add(rows(500, 5));
    assert.equal(await t.countRows(), 55);
    ns.close();
  });
  it('a database runs at most its budget of maintenance jobs at once (max_concurrent)', async () => {
    const b = await newTenant(gw);
    const db = await gw.app.get(UnitOfWork).db.$queryRawUnsafe<{ id: string }[]>(`SELECT id FROM databases WHERE name = $1`, b.name);
    const sqlRun = (q: string, ...params: unknown[]) => gw.app.get(UnitOfWork).db.$executeRawUnsafe(q, ...params);
    // One maintenance job of the database runs (on a replica that holds its lease), another waits.
    const running = randomUUID();
    const queued = randomUUID();
    await sqlRun(
      `INSERT INTO jobs (id, database_id, catalog, table_id, job_type, state, spec, principal, owner, lease_expires_at, attempts)
       VALUES ($1::uuid, $2::uuid, '', ARRAY['held'], 'compact', 'RUNNING', '{"maintenance": true}'::jsonb, 'test', 'elsewhere', now() + interval '1 hour', 1)`,
      running,
      db[0].id,
    );
    await sqlRun(
      `INSERT INTO jobs (id, database_id, catalog, table_id, job_type, state, spec, principal)
       VALUES ($1::uuid, $2::uuid, '', ARRAY['gone'], 'compact', 'QUEUED', '{"maintenance": true, "table_uuid": "00000000-0000-0000-0000-000000000000"}'::jsonb, 'test')`,
      queued,
      db[0].id,
    );
    // Other databases' jobs still run meanwhile.
    const other = await (await remote(gw, tenant)).createTable('budget_other', rows(0, 5));
    const r = await tenant.api.post(`/v1/table/${idPath('budget_other')}/maintenance/run`, { type: 'compact' });
    await finished(tenant, r.body.job_id);
    void other;
    assert.equal((await describeJob(b, queued)).job_state, 'IN_PROGRESS');
    const state = await gw.app
      .get(UnitOfWork)
      .db.$queryRawUnsafe<{ state: string }[]>(`SELECT state FROM jobs WHERE id = $1::uuid`, queued);
    assert.equal(state[0].state, 'QUEUED');
    // A budget of 2: it runs (and finds its table gone).
    assert.equal((await operator(gw).request('PUT', `/admin/v1/databases/${b.name}/maintenance`, { max_concurrent: 2 })).status, 200);
    const d = await finished(b, queued);
    assert.equal(d.result!.outcome, 'skipped');
    await sqlRun(`DELETE FROM jobs WHERE id = $1::uuid`, running);
  });
  it(
    'the CLI: maintenance get, set and run (with a dry run)',
    {
      skip:
        kind !== 'postgres' || TEST_STORAGE !== 'local'
          ? 'the CLI shares a Postgres catalog and local storage with the running gateway'
          : false,
    },
    async () => {
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        DATABASE_URL: pgUrlFor(gw.pgDatabase!),
        DATA_DIR: gw.dataDir,
        NODE_NO_WARNINGS: '1',
        JOBS_POLL_INTERVAL_MS: '100',
      };
      delete env.ADMIN_API_KEY;
      delete env.BOOTSTRAP_DATABASE;
      const cli = (...args: string[]) => runAdmin(args, env);
      const db = await remote(gw, tenant);
      const t = await db.createTable('by_cli', rows(0, 10));
      for (let i = 0; i < 3; i++) await t.add(rows(100 + i, 1), { mode: 'overwrite' });
      const set = await cli('maintenance', 'set', tenant.name, '--compact-min-fragments', '12', '--cleanup-retention-seconds', '7200');
      assert.equal(set.code, 0, set.stderr);
      assert.deepEqual(set.json.maintenance, { compact_min_fragments: 12, cleanup_retention_seconds: 7200 });
      const got = await cli('maintenance', 'get', tenant.name);
      assert.deepEqual(got.json.maintenance, { compact_min_fragments: 12, cleanup_retention_seconds: 7200 });
      const bad = await cli('maintenance', 'set', tenant.name, '--compact-min-fragments', 'many');
      assert.equal(bad.code, 2, bad.stderr);
      const dry = await cli('maintenance', 'run', tenant.name, 'by_cli', '--type', 'cleanup', '--dry-run', '--retention-seconds', '0');
      assert.equal(dry.code, 0, dry.stderr);
      assert.deepEqual(
        dry.json.versions_to_remove.map((v: { version: number }) => v.version),
        [1, 2, 3],
      );
      const run = await cli('maintenance', 'run', tenant.name, 'by_cli', '--type', 'cleanup', '--retention-seconds', '0');
      assert.equal(run.code, 0, run.stderr);
      const d = await finished(tenant, run.json.job_id);
      assert.equal(d.job_type, 'cleanup');
      assert.ok(d.result!.versions_removed >= 3, JSON.stringify(d.result));
      assert.equal(await t.countRows(), 1);
      await operator(gw).request('PUT', `/admin/v1/databases/${tenant.name}/maintenance`, {});
    },
  );

  it("cleanup never touches a table with branches, a shallow clone's source or the clone itself; compaction still runs", async () => {
    const db = await remote(gw, tenant);
    const t = await db.createTable('branched', rows(0, 50));
    for (let i = 0; i < 3; i++) await t.add(rows(0, 50), { mode: 'overwrite' });
    assert.equal((await tenant.api.post(`/v1/table/${idPath('branched')}/branches/create`, { name: 'side' })).status, 200);
    const dry = await tenant.api.post(`/v1/table/${idPath('branched')}/maintenance/run`, {
      type: 'cleanup',
      dry_run: true,
      retention_seconds: 0,
    });
    assert.equal(dry.body.cleanup_allowed, false, dry.text);
    assert.match(dry.body.reason, /branches/);
    assert.deepEqual(dry.body.versions_to_remove, []);
    const versions = (await t.listVersions()).length;
    const run = await tenant.api.post(`/v1/table/${idPath('branched')}/maintenance/run`, { type: 'all', retention_seconds: 0 });
    const d = await finished(tenant, run.body.job_id);
    assert.match(String(d.result!.cleanup_skipped), /branches/);
    assert.ok(!(d.result!.ran as string[]).includes('cleanup'));
    assert.equal(d.result!.versions_removed, 0);
    assert.ok((await t.listVersions()).length >= versions);

    if (TEST_STORAGE !== 's3') {
      // (The engine cannot open a shallow clone's source on the object store: clone.test.ts.)
      const src = await db.createTable('clone_src', rows(0, 20));
      for (let i = 0; i < 3; i++) await src.add(rows(0, 20), { mode: 'overwrite' });
      const loc = (await tenant.api.post(`/v1/table/${idPath('clone_src')}/describe`, {})).body.location as string;
      const clone = await db.cloneTable('the_clone', loc, { sourceVersion: 1 });
      assert.equal(await clone.countRows(), 20);
      for (const name of ['clone_src', 'the_clone']) {
        const r = await tenant.api.post(`/v1/table/${idPath(name)}/maintenance/run`, { type: 'cleanup', retention_seconds: 0 });
        const x = await finished(tenant, r.body.job_id);
        assert.match(String(x.result!.cleanup_skipped), /shallow clone/, name);
      }
      // The clone still reads its source's first version.
      const again = await (await remote(gw, tenant)).openTable('the_clone');
      assert.equal(await again.countRows(), 20);
    }
  });
});
