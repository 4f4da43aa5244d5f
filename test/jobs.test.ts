import assert from 'node:assert/strict';
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as lancedb from '@lancedb/lancedb';
import * as arrow from 'apache-arrow';
import { Client } from 'pg';
import {
  Api,
  CATALOG_KINDS,
  CatalogKind,
  createPgDatabase,
  eventually,
  forEachCatalog,
  idPath,
  newTenant,
  operator,
  startGateway,
  Tenant,
  TestGateway,
} from './helpers/gateway';
import { JobRunner } from '../src/modules/jobs/jobs.runner';
import { JobsRepository } from '../src/modules/jobs/jobs.repository';
import { expectProblem } from './helpers/assertions';
import { freePort } from './helpers/redis';
import { program } from './helpers/root';

const MAIN = program(path.resolve(__dirname, '../src/main.js'));

/**
 * Jobs (issue 13): `backfill_column` answers a job id; `/v1/jobs/list|describe|cancel` per database; jobs are kept in
 * the catalog, so they survive a restart and run on any replica; a job whose runner died is taken over once its lease
 * expired. The official remote client drives the job routes where it can (refreshColumnAsync, listJobs, openJob,
 * cancelJob); raw HTTP covers the rest.
 */

const STRICT = new arrow.Schema([new arrow.Field('id', new arrow.Int64(), false), new arrow.Field('x', new arrow.Float64(), true)]);
const ROWS = Array.from({ length: 20 }, (_, i) => ({ id: i, x: i * 1.5 }));

async function remote(gw: { url: string }, tenant: Tenant, key = tenant.writeKey) {
  return lancedb.connect(`db://${tenant.name}`, { apiKey: key, hostOverride: gw.url });
}

/** A table of ROWS with a computed column `y = x * 2` (declared, not yet filled), made through the official client. */
async function tableWithComputed(db: lancedb.Connection, name: string): Promise<lancedb.Table> {
  const t = await db.createTable(name, ROWS);
  await t.addColumns({ computed: [{ name: 'y', valueSql: 'x * 2' }] });
  return t;
}

async function ys(t: lancedb.Table): Promise<Array<number | null>> {
  const rows = (await t.query().select(['id', 'y']).toArray()) as Array<{ id: number; y: number | null }>;
  return rows.sort((a, b) => a.id - b.id).map((r) => r.y);
}

const filled = ROWS.map((r) => r.x * 2);

async function audit(
  gw: { url: string },
  tenant: Tenant,
): Promise<Array<{ action: string; target: string; details: Record<string, unknown> }>> {
  const r = await operator(gw).get(`/admin/v1/databases/${tenant.name}/audit?limit=1000`);
  assert.equal(r.status, 200, r.text);
  return r.body.events;
}

forEachCatalog('jobs', (kind) => {
  let gw: TestGateway;
  let idle: TestGateway | undefined;

  before(async () => {
    gw = await startGateway(kind, { JOBS_POLL_INTERVAL_MS: '100', MAINTENANCE_ENABLED: 'false' });
  });
  after(async () => {
    await gw?.close();
    await idle?.close();
  });

  it('the runner looks for exhausted jobs (TIMED_OUT) once per lease period, not at every claiming round', async () => {
    const repo = gw.app.get(JobsRepository);
    const runner = gw.app.get(JobRunner);
    const original = repo.timeOutExhausted.bind(repo);
    let sweeps = 0;
    repo.timeOutExhausted = async (max: number) => {
      sweeps++;
      return original(max);
    };
    try {
      // Five rounds well within one lease (JOBS_LEASE_SECONDS, 30 s here): at most one of them sweeps.
      for (let i = 0; i < 5; i++) await runner.poll();
      assert.ok(sweeps <= 1, `${sweeps} time-out sweeps in five rounds`);
    } finally {
      repo.timeOutExhausted = original;
    }
  });

  it('backfill_column through the official client: refreshColumnAsync, wait, listJobs, openJob; the column is filled', async () => {
    const tenant = await newTenant(gw);
    const db = await remote(gw, tenant);
    const t = await tableWithComputed(db, 'docs');
    assert.deepEqual(
      await ys(t),
      ROWS.map(() => null),
      'a computed column is declared empty',
    );

    const job = await t.refreshColumnAsync('y');
    assert.ok(job.id, 'a server job has an id');
    await job.wait();
    assert.equal(await job.status(), 'finished');
    assert.equal(job.jobType, 'backfill_column');
    assert.equal((job.result as Record<string, number>).rows_assigned, ROWS.length);
    assert.deepEqual(await ys(t), filled);

    const listed = await db.listJobs();
    const mine = listed.find((j) => j.jobId === job.id);
    assert.ok(mine, `listJobs has the job: ${JSON.stringify(listed)}`);
    assert.equal(mine.table, 'docs');
    assert.equal(mine.jobType, 'backfill_column');
    assert.equal(mine.state, 'finished');
    assert.ok(Math.abs(mine.createdAtMillis - Date.now()) < 600_000);

    const opened = await db.openJob(job.id!);
    assert.equal(opened.state, 'finished');
    assert.deepEqual(opened.spec, { table: 'docs', table_id: ['docs'], column: 'y' });
    // A second backfill finds nothing left to fill.
    const again = await t.refreshColumnAsync('y');
    await again.wait();
    assert.equal((await db.openJob(again.id!)).result.rows_assigned, 0);

    // Audited: the request that made the job, and the job's own commit (confirmed).
    const events = await audit(gw, tenant);
    const submitted = events.filter((e) => e.action === 'table.backfill_column');
    assert.equal(submitted.length, 2);
    assert.ok(submitted.some((e) => e.details.job_id === job.id && e.target === 'docs'));
    const ran = events.find((e) => e.action === 'job.backfill_column' && e.details.job_id === job.id);
    assert.ok(ran, JSON.stringify(events));
    assert.equal(ran.details.outcome, 'committed');
    assert.equal(ran.details.rows_filled, ROWS.length);
  });

  it('the wire: 202 {job_id}; describe and list shapes; bad input refused before a job is made', async () => {
    const tenant = await newTenant(gw);
    const db = await remote(gw, tenant);
    await tableWithComputed(db, 'wire');
    const api = tenant.api;

    const r = await api.post(`/v1/table/${idPath('wire')}/backfill_column`, { column: 'y' });
    assert.equal(r.status, 202, r.text);
    assert.deepEqual(Object.keys(r.body), ['job_id']);
    const done = await eventually(async () => {
      const d = await api.post('/v1/jobs/describe', { job_id: r.body.job_id });
      return d.body.job_state === 'DONE' && d;
    });
    assert.equal(done.status, 200);
    assert.equal(done.body.job_type, 'backfill_column');
    assert.equal(typeof done.body.creation_ms, 'number');
    assert.equal(done.body.result.rows_assigned, ROWS.length);
    assert.equal(done.body.result.published_version, done.body.result.version);
    assert.equal(done.body.failure, undefined);
    assert.equal(done.body.attempts, 1);

    const list = await tenant.reader.post('/v1/jobs/list', {});
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(
      list.body.jobs.map((j: { job_id: string }) => j.job_id),
      [r.body.job_id],
    );
    assert.deepEqual(Object.keys(list.body.jobs[0]).sort(), [
      'created_at_millis',
      'finished_at_millis',
      'job_id',
      'job_type',
      'started_at_millis',
      'state',
      'table',
      'table_id',
    ]);
    assert.equal(list.body.jobs[0].state, 'DONE');
    // Its times: created ≤ started ≤ finished, the same in the list and in describe.
    const listed = list.body.jobs[0];
    assert.ok(listed.created_at_millis <= listed.started_at_millis, JSON.stringify(listed));
    assert.ok(listed.started_at_millis <= listed.finished_at_millis, JSON.stringify(listed));
    assert.equal(done.body.started_ms, listed.started_at_millis);
    assert.equal(done.body.finished_ms, listed.finished_at_millis);

    // Before any job is made: an unknown column, a column that is not computed, `where`, an unknown table.
    expectProblem(await api.post(`/v1/table/${idPath('wire')}/backfill_column`, { column: 'nope' }), 404, 12);
    expectProblem(await api.post(`/v1/table/${idPath('wire')}/backfill_column`, { column: 'x' }), 400, 13, {
      msg: /not a computed column/,
    });
    expectProblem(await api.post(`/v1/table/${idPath('wire')}/backfill_column`, { column: 'y', where: 'id > 3' }), 406, 0);
    expectProblem(await api.post(`/v1/table/${idPath('ghost')}/backfill_column`, { column: 'y' }), 404, 4);
    expectProblem(await api.post(`/v1/table/${idPath('wire')}/backfill_column`, {}), 400, 13);
    await assert.rejects(() => db.openTable('wire').then((t) => t.refreshColumnAsync('x')), /not a computed column/);
    assert.equal((await api.post('/v1/jobs/list', {})).body.jobs.length, 1, 'refused requests made no job');

    // Paging, newest first.
    const second = await api.post(`/v1/table/${idPath('wire')}/backfill_column`, { column: 'y' });
    const p1 = await api.post('/v1/jobs/list', { limit: 1 });
    assert.deepEqual(
      p1.body.jobs.map((j: { job_id: string }) => j.job_id),
      [second.body.job_id],
    );
    const p2 = await api.post('/v1/jobs/list', { limit: 1, page_token: p1.body.page_token });
    assert.deepEqual(
      p2.body.jobs.map((j: { job_id: string }) => j.job_id),
      [r.body.job_id],
    );
    assert.equal(p2.body.page_token, undefined);

    // A job the engine cannot do ends FAILED, with why: the refresh cannot read a table with deleted rows through a
    // non-nullable input column (an engine limitation).
    const strict = await db.createTable(
      'strict',
      lancedb.makeArrowTable(
        ROWS.map((r) => ({ id: BigInt(r.id), x: r.x })),
        { schema: STRICT },
      ),
    );
    await strict.delete('id = 3');
    await strict.addColumns({ computed: [{ name: 'y', valueSql: 'id * 2' }] });
    const bad = await strict.refreshColumnAsync('y');
    await assert.rejects(() => bad.wait(), /compact the table/);
    const failed = await api.post('/v1/jobs/describe', { job_id: bad.id });
    assert.equal(failed.body.job_state, 'FAILED');
    assert.deepEqual(Object.keys(failed.body.failure).sort(), ['message', 'phase', 'retryable']);
    assert.equal(failed.body.failure.retryable, false);
    assert.equal(failed.body.result, undefined);
    assert.equal((await db.openJob(bad.id!)).state, 'failed');
    // The list says why too (the same failure as describe), with the job's times; jobs that did not fail carry none.
    const withFailure = (await api.post('/v1/jobs/list', {})).body.jobs;
    const failedListed = withFailure.find((j: { job_id: string }) => j.job_id === bad.id);
    assert.deepEqual(failedListed.failure, failed.body.failure);
    assert.match(failedListed.failure.message, /compact the table/);
    assert.equal(failedListed.state, 'FAILED');
    assert.equal(typeof failedListed.finished_at_millis, 'number');
    assert.equal(failedListed.finished_at_millis, failed.body.finished_ms);
    for (const j of withFailure.filter((j: { job_id: string }) => j.job_id !== bad.id)) assert.equal(j.failure, undefined);

    // Events are not recorded: the client's Job.events() is told so (406), not sent to an unknown route.
    expectProblem(await api.post('/v1/jobs/query_events', { job_id: r.body.job_id }), 406, 0);
    await assert.rejects(() => db.openJob(r.body.job_id).then((j) => j.events()), /not recorded/);
    expectProblem(await api.post('/v1/jobs/describe', { job_id: 'not-a-uuid' }), 404, 0);
    expectProblem(await api.post('/v1/jobs/describe', { job_id: '00000000-0000-4000-8000-000000000000' }), 404, 0);
    expectProblem(await api.post('/v1/jobs/describe', {}), 400, 13);
  });

  it('backfill_column on a branch fills the branch only; a branch the table lacks is refused before a job is made', async () => {
    const tenant = await newTenant(gw);
    const db = await remote(gw, tenant);
    await tableWithComputed(db, 'branchy');
    const p = `/v1/table/${idPath('branchy')}`;
    assert.equal((await tenant.api.post(`${p}/branches/create`, { name: 'dev' })).status, 200);
    const r = await tenant.api.post(`${p}/backfill_column`, { column: 'y', branch: 'dev' });
    assert.equal(r.status, 202, r.text);
    await (await db.openJob(r.body.job_id)).wait();
    const nulls = async (branch?: string) =>
      (await tenant.api.post(`${p}/count_rows`, { predicate: 'y IS NULL', ...(branch ? { branch } : {}) })).body;
    assert.equal(await nulls('dev'), 0);
    assert.equal(await nulls(), ROWS.length, 'main is untouched');
    assert.equal((await tenant.api.post('/v1/jobs/describe', { job_id: r.body.job_id })).body.spec.branch, 'dev');
    expectProblem(await tenant.api.post(`${p}/backfill_column`, { column: 'y', branch: 'ghost' }), 404, 22);
    assert.equal((await db.listJobs()).length, 1);
  });

  it('per database: another database sees 404 (openJob rejects, cancelJob false); read keys list and describe, only write keys cancel or submit', async () => {
    const a = await newTenant(gw);
    const b = await newTenant(gw);
    const dbA = await remote(gw, a);
    const t = await tableWithComputed(dbA, 'mine');
    const job = await t.refreshColumnAsync('y');
    await job.wait();
    const id = job.id!;

    expectProblem(await b.api.post('/v1/jobs/describe', { job_id: id }), 404, 0);
    expectProblem(await b.api.post('/v1/jobs/cancel', { job_id: id }), 404, 0);
    assert.deepEqual((await b.api.post('/v1/jobs/list', {})).body.jobs, []);
    const dbB = await remote(gw, b);
    await assert.rejects(() => dbB.openJob(id));
    assert.equal(await dbB.cancelJob(id), false);
    assert.deepEqual(await dbB.listJobs(), []);

    // A database prefix is a catalog of its own: its jobs are not the database's, nor the other way round.
    const dbP = await lancedb.connect(`db://${a.name}/team1`, { apiKey: a.writeKey, hostOverride: gw.url });
    await assert.rejects(() => dbP.openJob(id));
    assert.deepEqual(await dbP.listJobs(), []);
    const tp = await tableWithComputed(dbP, 'mine');
    const jp = await tp.refreshColumnAsync('y');
    await jp.wait();
    assert.deepEqual(
      (await dbP.listJobs()).map((j) => j.jobId),
      [jp.id],
    );
    assert.deepEqual(
      (await dbA.listJobs()).map((j) => j.jobId),
      [id],
    );
    expectProblem(await a.api.post('/v1/jobs/describe', { job_id: jp.id }), 404, 0);

    assert.equal((await a.reader.post('/v1/jobs/describe', { job_id: id })).status, 200);
    assert.equal((await a.reader.post('/v1/jobs/list', {})).status, 200);
    expectProblem(await a.reader.post('/v1/jobs/cancel', { job_id: id }), 403, 15);
    expectProblem(await a.reader.post(`/v1/table/${idPath('mine')}/backfill_column`, { column: 'y' }), 403, 15);
    expectProblem(await new Api(gw.url, { 'x-service-database': a.name }).post('/v1/jobs/list', {}), 401, 16);
    // A write key of the database cancels; a finished job stays as it was.
    const c = await a.api.post('/v1/jobs/cancel', { job_id: id });
    assert.equal(c.status, 200, c.text);
    assert.equal(c.body.job_state, 'DONE');
    assert.equal(await dbA.cancelJob(id), true);
    assert.ok(!(await audit(gw, a)).some((e) => e.action === 'job.cancel'), 'cancelling a finished job changed nothing and is not audited');
  });

  it('drops: a drop whose folder deletion outlasts DROP_SYNC_BUDGET_MS answers a job id (dropTableAsync waits on it); a quick one answers none', async () => {
    const tenant = await newTenant(gw);
    const db = await remote(gw, tenant);
    await db.createTable('quick', ROWS);
    const quick = await db.dropTableAsync('quick');
    assert.equal(quick.id, null, 'deleted within the budget: no server job');
    assert.deepEqual(await db.listJobs(), []);

    idle = await startGateway(kind, { DROP_SYNC_BUDGET_MS: '0', JOBS_POLL_INTERVAL_MS: '0', MAINTENANCE_ENABLED: 'false' });
    const other = await newTenant(idle);
    const db2 = await remote(idle, other);
    for (const name of ['big', 'raw']) await db2.createTable(name, ROWS);
    const where = (await other.api.post(`/v1/table/${idPath('big')}/describe`, {})).body.location as string;
    const folder = where.replace(/^file:\/\//, '');
    assert.ok(fs.existsSync(folder), `the table's folder ${folder}`);
    const job = await db2.dropTableAsync('big');
    assert.ok(job.id, 'a server job');
    assert.deepEqual(await db2.tableNames(), ['raw'], 'the table is gone at once');
    await job.wait();
    assert.equal(await job.status(), 'finished');
    assert.equal(fs.existsSync(folder), false, 'its folder is deleted when the job is done');
    const d = await other.api.post('/v1/jobs/describe', { job_id: job.id });
    assert.equal(d.body.job_type, 'drop_table');
    assert.equal(d.body.job_state, 'DONE');
    assert.equal(d.body.spec.table, 'big');
    assert.deepEqual(d.body.result, { location: where, removed: true });
    // The spec dialect's drop answers the job id beside the table it dropped.
    const raw = await other.api.post(`/v1/table/${idPath('raw')}/drop`, {});
    assert.equal(raw.status, 200, raw.text);
    assert.deepEqual(raw.body.id, ['raw']);
    assert.equal(typeof raw.body.job_id, 'string');
    await (await db2.openJob(raw.body.job_id)).wait();
    await idle.close();
    idle = undefined;
  });

  it('cancel: a queued job (no replica runs jobs) ends CANCELLED and never runs; jobs survive a restart and run on the next replica', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'lgw-jobs-'));
    const pg = kind === 'postgres' ? await createPgDatabase() : undefined;
    const shared = { DATA_DIR: dataDir, STORAGE_ROOT: path.join(dataDir, 'tables'), ...(pg ? { DATABASE_URL: pg.url } : {}) };
    try {
      idle = await startGateway(kind, { ...shared, JOBS_POLL_INTERVAL_MS: '0', MAINTENANCE_ENABLED: 'false' });
      const tenant = await newTenant(idle);
      const db = await remote(idle, tenant);
      const t = await tableWithComputed(db, 'later');
      const cancelled = await t.refreshColumnAsync('y');
      const kept = await t.refreshColumnAsync('y');
      assert.equal(await cancelled.status(), 'running', 'queued: nobody runs jobs here');
      const queued = await tenant.api.post('/v1/jobs/describe', { job_id: cancelled.id });
      assert.equal(queued.body.job_state, 'IN_PROGRESS');
      // Queued: neither started nor finished.
      assert.equal(queued.body.started_ms, null);
      assert.equal(queued.body.finished_ms, null);
      const queuedListed = (await tenant.api.post('/v1/jobs/list', {})).body.jobs.find(
        (j: { job_id: string }) => j.job_id === cancelled.id,
      );
      assert.equal(queuedListed.started_at_millis, null);
      assert.equal(queuedListed.finished_at_millis, null);

      assert.equal(await db.cancelJob(cancelled.id!), true);
      assert.equal(await cancelled.status(), 'cancelled');
      await assert.rejects(() => cancelled.wait(), /cancel/i);
      const ended = (await tenant.api.post('/v1/jobs/list', {})).body.jobs.find((j: { job_id: string }) => j.job_id === cancelled.id);
      assert.equal(ended.state, 'CANCELLED');
      assert.equal(ended.started_at_millis, null, 'cancelled before it ran');
      assert.equal(typeof ended.finished_at_millis, 'number');
      const events = await audit(idle, tenant);
      const rec = events.find((e) => e.action === 'job.cancel');
      assert.ok(rec, JSON.stringify(events));
      assert.equal(rec.target, `job ${cancelled.id}`);
      assert.equal(rec.details.state, 'CANCELLED');

      // The replica stops; the next one (which runs jobs) finds the queued job in the catalog and runs it.
      await idle.close();
      idle = await startGateway(kind, { ...shared, JOBS_POLL_INTERVAL_MS: '100', MAINTENANCE_ENABLED: 'false' });
      const db2 = await remote(idle, tenant);
      const job = await db2.openJob(kept.id!);
      await job.wait();
      assert.equal(await job.status(), 'finished');
      assert.equal((await db2.openJob(cancelled.id!)).state, 'cancelled', 'a cancelled job is never run');
      assert.deepEqual(await ys(await db2.openTable('later')), filled);
    } finally {
      await idle?.close();
      idle = undefined;
      await pg?.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('jobs on two replicas sharing Postgres', { skip: !CATALOG_KINDS.includes('postgres') }, () => {
  let pg: Awaited<ReturnType<typeof createPgDatabase>>;
  let storageRoot: string;
  let catalog: Client;
  const gateways: TestGateway[] = [];
  const sql = async <T = any>(text: string, params: unknown[] = []): Promise<T[]> => (await catalog.query(text, params)).rows as T[];

  async function replica(env: Record<string, string>): Promise<TestGateway> {
    const g = await startGateway('postgres' as CatalogKind, {
      DATABASE_URL: pg.url,
      STORAGE_ROOT: storageRoot,
      MAINTENANCE_ENABLED: 'false',
      ...env,
    });
    gateways.push(g);
    return g;
  }

  before(async () => {
    pg = await createPgDatabase();
    storageRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'lgw-jobs-shared-'));
    catalog = new Client({ connectionString: pg.url });
    await catalog.connect();
  });
  const children: ChildProcess[] = [];
  after(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    for (const g of gateways) await g.close().catch(() => undefined);
    await catalog?.end();
    await pg?.drop();
    fs.rmSync(storageRoot, { recursive: true, force: true });
  });

  it('a job made through one replica is visible and cancellable through the other, run by a third, and taken over once its runner died', async () => {
    // A and B run no jobs themselves; C (started later) does, with a one-second lease.
    const a = await replica({ JOBS_POLL_INTERVAL_MS: '0' });
    const b = await replica({ JOBS_POLL_INTERVAL_MS: '0' });
    const tenant = await newTenant(a);
    const onA = await remote(a, tenant);
    const onB = await remote(b, tenant);
    const t = await tableWithComputed(onA, 'shared');

    // Made through A; seen, listed and cancelled through B; A sees the cancel.
    const j1 = await t.refreshColumnAsync('y');
    assert.equal((await onB.openJob(j1.id!)).state, 'running');
    assert.ok((await onB.listJobs()).some((j) => j.jobId === j1.id));
    assert.equal(await onB.cancelJob(j1.id!), true);
    assert.equal((await onA.openJob(j1.id!)).state, 'cancelled');

    // Made through A and queued; another job (j3) held by a replica that then died: RUNNING, its lease running out in 3 s.
    const j2 = await t.refreshColumnAsync('y');
    const j3 = await t.refreshColumnAsync('y');
    await sql(
      `UPDATE jobs SET state = 'RUNNING', owner = 'dead-replica/1', attempts = 1, started_at = now(),
                       lease_expires_at = now() + interval '3 seconds' WHERE id = $1`,
      [j3.id],
    );
    // And one whose runners kept dying: lease expired after the last allowed attempt.
    const j4 = await t.refreshColumnAsync('y');
    await sql(
      `UPDATE jobs SET state = 'RUNNING', owner = 'dead-replica/2', attempts = 3, lease_expires_at = now() - interval '1 second' WHERE id = $1`,
      [j4.id],
    );
    await sql(`UPDATE jobs SET lease_expires_at = now() + interval '8 seconds' WHERE id = $1`, [j3.id]);

    // j1 ended long ago: older than JOBS_RETENTION_DAYS.
    await sql(`UPDATE jobs SET finished_at = now() - interval '8 days' WHERE id = $1`, [j1.id]);

    const c = await replica({ JOBS_POLL_INTERVAL_MS: '100', JOBS_LEASE_SECONDS: '1', JOBS_MAX_ATTEMPTS: '3', JOBS_RETENTION_DAYS: '7' });
    const onC = await remote(c, tenant);
    // C's first round: j4 ends TIMED_OUT (the client reports failed), never run again.
    await eventually(async () => (await tenant.api.post('/v1/jobs/describe', { job_id: j4.id })).body.job_state === 'TIMED_OUT', 200, 50);
    const d4 = await onC.openJob(j4.id!);
    assert.equal(d4.state, 'failed');
    assert.match(d4.failure?.message ?? '', /lost its runner 3 times/);
    // j3 is left alone while the dead replica's lease holds.
    const [held] = await sql(`SELECT state, owner, lease_expires_at > now() AS fresh FROM jobs WHERE id = $1`, [j3.id]);
    assert.equal(held.fresh, true, 'the test still has the lease fresh');
    assert.equal(held.state, 'RUNNING');
    assert.equal(held.owner, 'dead-replica/1');

    // C runs the queued job; A and B see it finished and the column filled.
    await (await onA.openJob(j2.id!)).wait();
    const d2 = await new Api(b.url, tenant.api.headers).post('/v1/jobs/describe', { job_id: j2.id });
    assert.equal(d2.body.job_state, 'DONE');
    const [row2] = await sql(`SELECT owner, attempts FROM jobs WHERE id = $1`, [j2.id]);
    assert.match(row2.owner, new RegExp(`/${process.pid}/`), 'run by a replica of this process (C)');
    assert.equal(row2.attempts, 1);
    assert.deepEqual(await ys(await onB.openTable('shared')), filled);

    // j3 is taken over by C once the lease expired: run again (attempt 2) to the end.
    await (await onB.openJob(j3.id!)).wait();
    const [row3] = await sql(`SELECT state, owner, attempts FROM jobs WHERE id = $1`, [j3.id]);
    assert.equal(row3.state, 'DONE');
    assert.notEqual(row3.owner, 'dead-replica/1');
    assert.equal(row3.attempts, 2);
    // The job that ended 8 days ago was deleted by C's first round; the others are kept.
    assert.equal((await sql(`SELECT 1 FROM jobs WHERE id = $1`, [j1.id])).length, 0);
    expectProblem(await tenant.api.post('/v1/jobs/describe', { job_id: j1.id }), 404, 0);
    assert.deepEqual((await onA.listJobs()).map((j) => j.jobId).sort(), [j2.id, j3.id, j4.id].sort());
  });

  it('a cancel reaches a running job through another replica: the job stops before its engine commit and ends CANCELLED', async () => {
    for (const g of gateways.splice(0)) await g.close();
    const a = await replica({ JOBS_POLL_INTERVAL_MS: '0' });
    const tenant = await newTenant(a);
    const onA = await remote(a, tenant);
    const t = await tableWithComputed(onA, 'stopme');
    const job = await t.refreshColumnAsync('y');
    // The runner is held inside the job (its catalog read of the table waits on a lock held here) while the cancel comes.
    const locker = new Client({ connectionString: pg.url });
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE tables IN ACCESS EXCLUSIVE MODE');
    try {
      await replica({ JOBS_POLL_INTERVAL_MS: '100', RECLAIM_INTERVAL_SECONDS: '0' });
      await eventually(async () => (await sql(`SELECT 1 FROM jobs WHERE id = $1 AND state = 'RUNNING'`, [job.id])).length > 0, 400, 50);
      const r = await tenant.api.post('/v1/jobs/cancel', { job_id: job.id });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body, { job_id: job.id, job_state: 'IN_PROGRESS', cancel_requested: true });
    } finally {
      await locker.query('ROLLBACK');
      await locker.end();
    }
    await assert.rejects(() => job.wait(), /cancel/i);
    assert.equal((await onA.openJob(job.id!)).state, 'cancelled');
    assert.deepEqual(
      await ys(await onA.openTable('stopme')),
      ROWS.map(() => null),
      'nothing was committed',
    );
    const events = await audit(a, tenant);
    assert.ok(!events.some((e) => e.action === 'job.backfill_column'), 'no commit, no record of one');
    assert.ok(events.some((e) => e.action === 'job.cancel' && e.details.state === 'IN_PROGRESS'));
  });

  it('a replica SIGKILLed in the middle of a job: another takes the job over once the lease expired, and runs it to the end', async () => {
    // No replica of the previous test may run this job.
    for (const g of gateways.splice(0)) await g.close();
    const a = await replica({ JOBS_POLL_INTERVAL_MS: '0' });
    const tenant = await newTenant(a);
    const onA = await remote(a, tenant);
    const t = await tableWithComputed(onA, 'crashy');
    const job = await t.refreshColumnAsync('y');

    // The runner-to-be is stopped inside the job: its first catalog read of the table waits on a lock held here.
    const locker = new Client({ connectionString: pg.url });
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE tables IN ACCESS EXCLUSIVE MODE');
    const port = await freePort();
    const childDir = fs.mkdtempSync(path.join(os.tmpdir(), 'lgw-jobs-child-'));
    const child = spawn(process.execPath, [MAIN], {
      env: {
        ...process.env,
        PORT: String(port),
        DATABASE_URL: pg.url,
        DATA_DIR: childDir,
        STORAGE_ROOT: storageRoot,
        ADMIN_API_KEY: 'test-operator-key-0123456789',
        BOOTSTRAP_DATABASE: '',
        JOBS_POLL_INTERVAL_MS: '100',
        JOBS_LEASE_SECONDS: '1',
        RECLAIM_INTERVAL_SECONDS: '0',
        MAINTENANCE_ENABLED: 'false',
        NODE_NO_WARNINGS: '1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    try {
      const [claimed] = await eventually(
        async () => {
          const rows = await sql(`SELECT state, owner, attempts FROM jobs WHERE id = $1 AND state = 'RUNNING'`, [job.id]);
          return rows.length > 0 && rows;
        },
        400,
        50,
      );
      assert.match(claimed.owner, new RegExp(`/${child.pid}/`), `claimed by the child process:\n${out}`);
      assert.equal(claimed.attempts, 1);
      // It renews its lease while it is stuck inside the job...
      const [l1] = await sql(`SELECT lease_expires_at AS l FROM jobs WHERE id = $1`, [job.id]);
      await eventually(
        async () => {
          const [l2] = await sql(`SELECT lease_expires_at AS l FROM jobs WHERE id = $1`, [job.id]);
          return l2.l.getTime() > l1.l.getTime();
        },
        100,
        50,
      );
      // ...until it dies.
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
    } finally {
      await locker.query('ROLLBACK');
      await locker.end();
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      fs.rmSync(childDir, { recursive: true, force: true });
    }
    assert.equal((await onA.openJob(job.id!)).state, 'running', 'still IN_PROGRESS: nobody has finished it');

    const c = await replica({ JOBS_POLL_INTERVAL_MS: '100', JOBS_LEASE_SECONDS: '1' });
    const onC = await remote(c, tenant);
    const taken = await onC.openJob(job.id!);
    await taken.wait();
    assert.equal(await taken.status(), 'finished');
    const [row] = await sql(`SELECT state, owner, attempts FROM jobs WHERE id = $1`, [job.id]);
    assert.equal(row.state, 'DONE');
    assert.equal(row.attempts, 2, 'run a second time, by the replica that took it over');
    assert.match(row.owner, new RegExp(`/${process.pid}/`));
    assert.deepEqual(await ys(await onA.openTable('crashy')), filled);
  });
});
