import assert from 'node:assert/strict';
import { ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as arrow from 'apache-arrow';
import { UsageMeter } from '../src/modules/metering/usage-meter.service';
import { NO_COUNTS, UsageRepository, zeroRow } from '../src/modules/metering/usage.repository';
import { PrismaClient } from '../src/generated/prisma/client';
import { UnitOfWork } from '../src/platform/db/unit-of-work';
import { expectProblem } from './helpers/assertions';
import {
  ADMIN_KEY,
  Api,
  CATALOG_KINDS,
  createPgDatabase,
  eventually,
  forEachCatalog,
  newTenant,
  operator,
  startGateway,
  twoReplicas,
  Tenant,
  TestGateway,
} from './helpers/gateway';
import { freePort, SHARED_REDIS_URL } from './helpers/redis';
import { Prng } from './helpers/prng';
import { program } from './helpers/root';
import { runAdmin } from './helpers/admin-cli';

/**
 * Usage metering (docs/usage-and-quotas.md): exact request, row, byte and query counts per database, flushed from
 * memory to the catalog with an idempotent upsert; the usage API (JSON and CSV) and who may read it; two gateways on
 * one Postgres and Redis counting into the same figures; a gateway killed between flushes losing at most what it had
 * not flushed and nothing counted twice.
 */
const ARROW = 'application/vnd.apache.arrow.stream';

function rowsOf(from: number, n: number): Buffer {
  const table = new arrow.Table({
    id: arrow.vectorFromArray(Int32Array.from({ length: n }, (_, i) => from + i)),
    name: arrow.vectorFromArray(
      Array.from({ length: n }, (_, i) => `name-${from + i}`),
      new arrow.Utf8(),
    ),
  });
  return Buffer.from(arrow.tableToIPC(table, 'stream'));
}

async function postArrow(
  url: string,
  t: { name: string; writeKey: string },
  p: string,
  body: Buffer,
): Promise<{ status: number; text: string }> {
  const res = await fetch(url + p, {
    method: 'POST',
    headers: { 'x-api-key': t.writeKey, 'x-service-database': t.name, 'content-type': ARROW },
    body,
  });
  return { status: res.status, text: await res.text() };
}

const today = () => new Date().toISOString().slice(0, 10);

/** Today's row of a database's usage report (day granularity). */
async function todayOf(api: Api, name: string): Promise<any> {
  const r = await api.get(`/admin/v1/databases/${name}/usage?granularity=day`);
  assert.equal(r.status, 200, r.text);
  const row = r.body.periods.find((p: any) => p.start.startsWith(today()));
  assert.ok(row, `a row for today in ${r.text.slice(0, 300)}`);
  return row;
}

/** Totals a test expects, kept as requests are made. */
class Expected {
  read = 0;
  write = 0;
  rows = 0;
  bytes = 0;
  queries = 0;
  matches(row: any): boolean {
    return (
      row.read_requests === this.read &&
      row.write_requests === this.write &&
      row.rows_written === this.rows &&
      row.bytes_ingested === this.bytes &&
      row.queries === this.queries &&
      row.requests === this.read + this.write
    );
  }
  toString() {
    return JSON.stringify({ read: this.read, write: this.write, rows: this.rows, bytes: this.bytes, queries: this.queries });
  }
}

/** A fixed mix of requests against one gateway, counted into `e`. */
async function workload(url: string, t: Tenant, table: string, from: number, e: Expected, create: boolean): Promise<void> {
  if (create) {
    const body = rowsOf(from, 10);
    const r = await postArrow(url, t, `/v1/tables/${table}`, body);
    assert.equal(r.status, 201, r.text);
    e.write++;
    e.rows += 10;
    e.bytes += body.length;
  }
  for (let i = 0; i < 3; i++) {
    const body = rowsOf(from + 100 + i * 7, 7);
    const r = await postArrow(url, t, `/v1/table/${table}/insert`, body);
    assert.equal(r.status, 200, r.text);
    e.write++;
    e.rows += 7;
    e.bytes += body.length;
  }
  const api = new Api(url, t.reader.headers);
  for (let i = 0; i < 2; i++) {
    const q = await api.post(`/v1/table/${table}/query`, { k: 5, filter: 'id >= 0', columns: ['id'] });
    assert.equal(q.status, 200, q.text);
    e.read++;
    e.queries++;
  }
  const c = await api.post(`/v1/table/${table}/count_rows`, {});
  assert.equal(c.status, 200, c.text);
  e.read++;
  // Refused by the access check (a read key asking for a write): not the database's use, not counted.
  const refused = await api.post(`/v1/table/${table}/delete`, { predicate: 'id < 0' });
  assert.equal(refused.status, 403, refused.text);
  // An unknown table: a read answered 404, counted.
  assert.equal((await api.post(`/v1/table/nope_${from}/count_rows`, {})).status, 404);
  e.read++;
}

forEachCatalog('usage metering', (kind) => {
  let gw: TestGateway;
  let tenant: Tenant;
  const e = new Expected();

  before(async () => {
    gw = await startGateway(kind, { USAGE_FLUSH_INTERVAL_SECONDS: '3600', USAGE_REFRESH_INTERVAL_SECONDS: '0' });
    tenant = await newTenant(gw);
  });
  after(() => gw?.close());

  const flush = () => gw.app.get(UsageMeter).flush();

  it('counts requests, rows, bytes and queries exactly, in the catalog only once flushed', async () => {
    await workload(gw.url, tenant, 'events', 0, e, true);
    const before = await todayOf(operator(gw), tenant.name);
    assert.equal(before.requests, 0, 'nothing is in the catalog before the flush');
    const row = await eventually(async () => {
      await flush();
      const r = await todayOf(operator(gw), tenant.name);
      return e.matches(r) && r;
    }).catch(async () => assert.fail(`expected ${e}, got ${JSON.stringify(await todayOf(operator(gw), tenant.name))}`));
    assert.equal(row.rows_written, 31);
    // Flushing again adds nothing.
    await flush();
    assert.ok(e.matches(await todayOf(operator(gw), tenant.name)));
  });

  it('adds a retried flush once (the (replica, seq) record)', async () => {
    const repo = gw.app.get(UsageRepository);
    const uow = gw.app.get(UnitOfWork);
    const db = (await operator(gw).get(`/admin/v1/databases/${tenant.name}`)).body;
    const hour = Math.floor(Date.now() / 3600_000) * 3600_000;
    const rows = [{ ...zeroRow(db.id, hour), readRequests: 5 }];
    assert.equal(await uow.run(() => repo.applyFlush('test-replica', 1, rows, [])), true);
    // The same batch again, as after a commit whose answer was lost: nothing added.
    assert.equal(await uow.run(() => repo.applyFlush('test-replica', 1, rows, [])), false);
    e.read += 5;
    assert.ok(e.matches(await todayOf(operator(gw), tenant.name)), `${e}`);
    // One database's row of one hour twice in a batch (the clock stepped back into an hour counted before): added up.
    const again = [rows[0], { ...rows[0], readRequests: 2, queries: 1 }];
    assert.equal(await uow.run(() => repo.applyFlush('test-replica', 2, again, [])), true);
    e.read += 7;
    e.queries += 1;
    assert.ok(e.matches(await todayOf(operator(gw), tenant.name)), `${e}`);
  });

  it("adds three replicas' concurrent flushes of the same rows in different orders exactly, without a deadlock", async () => {
    // Three replicas flushing at once, as in a fleet: every flush holds the same 3,000 counter rows (databases × two
    // hours) and marks the same 600 tables (written, opened, grown by location), each replica in an order of its own.
    // Unsorted, two transactions lock a shared row each the other needs next (40P01); sorted by key, never.
    const repo = gw.app.get(UsageRepository);
    const uow = gw.app.get(UnitOfWork);
    const prisma = gw.app.get(PrismaClient);
    const db = (await operator(gw).get(`/admin/v1/databases/${tenant.name}`)).body;
    const DATABASES = 1500;
    const TABLES = 600;
    const FLUSHES = 3;
    const hours = [Date.UTC(2020, 0, 1, 0), Date.UTC(2020, 0, 1, 1)];
    const databaseIds = Array.from({ length: DATABASES }, () => randomUUID());
    const prefix = `flushrace/${kind}/${db.id}`;
    const tables = await prisma.$queryRawUnsafe<{ id: string; location: string }[]>(
      `INSERT INTO tables (id, database_id, namespace_path, name, location)
       SELECT gen_random_uuid(), $1::uuid, '', 'flushrace_' || g, $2 || '/' || g FROM generate_series(1, ${TABLES}) g
       RETURNING id, location`,
      db.id,
      prefix,
    );
    /** A different order per replica and flush (seeded: failures repeat). */
    const shuffled = <T>(items: T[], seed: number): T[] => new Prng('flush-race', seed).shuffled(items);
    try {
      const flushes = await Promise.allSettled(
        [0, 1, 2].map(async (replica) => {
          for (let seq = 1; seq <= FLUSHES; seq++) {
            const seed = replica * 10 + seq;
            const rows = shuffled(
              databaseIds.flatMap((databaseId) =>
                hours.map((hour) => ({ databaseId, hour, ...NO_COUNTS, readRequests: 1, queries: replica + 1 })),
              ),
              seed,
            );
            const grown = shuffled(
              tables.map((t): [string, number] => [t.location, 10]),
              seed + 1,
            );
            const ids = tables.map((t) => t.id);
            await uow.run(() =>
              repo.applyFlush(`race-${kind}-${replica}`, seq, rows, shuffled(ids, seed + 2), grown, shuffled(ids.slice(0, 300), seed + 3)),
            );
          }
        }),
      );
      const failed = flushes.filter((f): f is PromiseRejectedResult => f.status === 'rejected');
      assert.deepEqual(
        failed.map((f) => String(f.reason?.message ?? f.reason).slice(0, 300)),
        [],
        'no flush failed',
      );
      const [sums] = await prisma.$queryRawUnsafe<{ n: number; r: string; q: string }[]>(
        `SELECT count(*)::int AS n, sum(read_requests)::text AS r, sum(queries)::text AS q FROM usage_counters
          WHERE database_id = ANY($1::uuid[])`,
        databaseIds,
      );
      assert.equal(sums.n, DATABASES * hours.length);
      assert.equal(Number(sums.r), DATABASES * hours.length * 3 * FLUSHES);
      assert.equal(Number(sums.q), DATABASES * hours.length * (1 + 2 + 3) * FLUSHES);
      const marks = await prisma.$queryRawUnsafe<{ marked: number; written: string; n: number }[]>(
        `SELECT u.marked, u.written_bytes::text AS written, count(*)::int AS n FROM table_usage u
          WHERE u.table_id = ANY($1::uuid[]) GROUP BY 1, 2`,
        tables.map((t) => t.id),
      );
      // Every table written (grown), each replica's every flush adding its 10 bytes.
      assert.deepEqual(marks, [{ marked: 1, written: String(3 * FLUSHES * 10), n: TABLES }]);
    } finally {
      await prisma.$executeRawUnsafe(`DELETE FROM usage_counters WHERE database_id = ANY($1::uuid[])`, databaseIds);
      await prisma.$executeRawUnsafe(`DELETE FROM tables WHERE database_id = $1::uuid AND location LIKE $2`, db.id, `${prefix}/%`);
    }
  });

  it('flushes once per call while counting goes on (steady traffic does not keep a flush running)', async () => {
    const meter = gw.app.get(UsageMeter);
    const repo = gw.app.get(UsageRepository);
    const db = (await operator(gw).get(`/admin/v1/databases/${tenant.name}`)).body;
    const original = repo.applyFlush;
    let transactions = 0;
    repo.applyFlush = function (this: UsageRepository, ...args: Parameters<UsageRepository['applyFlush']>) {
      transactions++;
      return original.apply(this, args);
    };
    // Requests counted on every turn of the event loop, as under load, until the flush ends (or CAP rounds, which
    // take far longer than one flush transaction).
    const CAP = 50_000;
    let counting = true;
    let counted = 0;
    const traffic = (async () => {
      while (counting && counted < CAP) {
        meter.request(db.id, false);
        counted++;
        await new Promise((r) => setImmediate(r));
      }
    })();
    try {
      await flush();
      counting = false;
      await traffic;
      assert.equal(transactions, 1, `one flush transaction while ${counted} requests were counted`);
      assert.ok(counted < CAP, 'the flush ended while counting went on');
    } finally {
      counting = false;
      repo.applyFlush = original;
    }
    // What was counted during and after that flush is added by the next one.
    await flush();
    e.read += counted;
    assert.ok(e.matches(await todayOf(operator(gw), tenant.name)), `${e}`);
  });

  it('answers per hour, and as CSV', async () => {
    const hourly = await operator(gw).get(`/admin/v1/databases/${tenant.name}/usage?granularity=hour`);
    assert.equal(hourly.status, 200, hourly.text);
    assert.equal(hourly.body.periods.length, 24);
    const sum = (k: string) => hourly.body.periods.reduce((n: number, p: any) => n + p[k], 0);
    assert.equal(sum('requests'), e.read + e.write);
    assert.equal(sum('bytes_ingested'), e.bytes);
    assert.ok(hourly.body.periods.every((p: any) => p.storage_bytes === null));

    const csv = await operator(gw).get(`/admin/v1/databases/${tenant.name}/usage?from=${today()}`, { accept: 'text/csv' });
    assert.equal(csv.status, 200);
    assert.match(csv.headers.get('content-type') ?? '', /^text\/csv/);
    const lines = csv.text.trim().split('\r\n');
    assert.equal(
      lines[0],
      'database,granularity,start,read_requests,write_requests,requests,rows_written,bytes_ingested,queries,storage_bytes,tables,namespaces,current_version_bytes,throttled_requests,failed_requests',
    );
    assert.equal(lines.length, 2, csv.text);
    const f = lines[1].split(',');
    assert.deepEqual(f.slice(0, 9), [
      tenant.name,
      'day',
      `${today()}T00:00:00.000Z`,
      String(e.read),
      String(e.write),
      String(e.read + e.write),
      String(e.rows),
      String(e.bytes),
      String(e.queries),
    ]);

    const bad = await operator(gw).get(`/admin/v1/databases/${tenant.name}/usage?granularity=week`);
    expectProblem(bad, 400, 13);
    expectProblem(await operator(gw).get(`/admin/v1/databases/${tenant.name}/usage?from=2026-01-01&to=2025-01-01`), 400, 13);
    expectProblem(await operator(gw).get(`/admin/v1/databases/nope_db/usage`), 404, 0);
  });

  it("is readable by the operator and the database's admin key only", async () => {
    const admin = await operator(gw).post(`/admin/v1/databases/${tenant.name}/api-keys`, { role: 'admin' });
    const asAdmin = new Api(gw.url, { 'x-api-key': admin.body.api_key });
    assert.equal((await asAdmin.get(`/admin/v1/databases/${tenant.name}/usage`)).status, 200);
    expectProblem(await new Api(gw.url, { 'x-api-key': tenant.writeKey }).get(`/admin/v1/databases/${tenant.name}/usage`), 403, 15);
    const other = await newTenant(gw);
    const otherAdmin = await operator(gw).post(`/admin/v1/databases/${other.name}/api-keys`, { role: 'admin' });
    expectProblem(await new Api(gw.url, { 'x-api-key': otherAdmin.body.api_key }).get(`/admin/v1/databases/${tenant.name}/usage`), 403, 15);
    // The fleet view and the storage ranking are the operator's.
    expectProblem(await asAdmin.get('/admin/v1/usage'), 403, 15);
    expectProblem(await asAdmin.get('/admin/v1/usage/top-storage'), 403, 15);
  });

  it('lists every database for a day, sorted by requests or storage, keyset-paginated, also as CSV', async () => {
    const quiet = await newTenant(gw);
    const busy = await newTenant(gw);
    for (let i = 0; i < 4; i++) assert.equal((await busy.reader.get('/v1/table')).status, 200);
    await eventually(async () => {
      await flush();
      const r = await operator(gw).get(`/admin/v1/usage?sort=requests&limit=1000`);
      return r.body.databases.find((d: any) => d.database === busy.name)?.read_requests === 4;
    });
    const all = (await operator(gw).get(`/admin/v1/usage?date=${today()}&sort=requests&limit=1000`)).body.databases;
    const names = all.map((d: any) => d.database);
    assert.ok(names.indexOf(tenant.name) < names.indexOf(busy.name), 'most requests first');
    assert.ok(names.indexOf(busy.name) < names.indexOf(quiet.name));
    const keys = all.map((d: any) => d.requests);
    assert.deepEqual(
      keys,
      [...keys].sort((a: number, b: number) => b - a),
    );
    // Page by page: the same rows, in the same order.
    const paged: string[] = [];
    let token: string | undefined;
    do {
      const r = await operator(gw).get(`/admin/v1/usage?sort=requests&limit=2${token ? `&page_token=${token}` : ''}`);
      assert.equal(r.status, 200, r.text);
      assert.ok(r.body.databases.length <= 2);
      paged.push(...r.body.databases.map((d: any) => d.database));
      token = r.body.page_token;
    } while (token);
    assert.deepEqual(paged, names);
    const byStorage = await operator(gw).get('/admin/v1/usage?sort=storage&limit=1000');
    assert.equal(byStorage.status, 200);
    assert.equal(byStorage.body.databases.length, names.length);
    const csv = await operator(gw).get(`/admin/v1/usage?sort=requests&limit=1`, { accept: 'text/csv' });
    assert.match(csv.text, /^date,database,read_requests/);
    assert.ok(csv.headers.get('x-page-token'), 'the next page token comes as a header');
    expectProblem(await operator(gw).get('/admin/v1/usage?sort=size'), 400, 13);
    expectProblem(await operator(gw).get('/admin/v1/usage?date=yesterday'), 400, 13);
    expectProblem(await operator(gw).get('/admin/v1/usage?page_token=abc'), 400, 13);
  });
});

describe('usage metering: two gateways on one Postgres and Redis [postgres]', { skip: !CATALOG_KINDS.includes('postgres') }, () => {
  let pair: Awaited<ReturnType<typeof twoReplicas>>;
  let a: TestGateway;
  let b: TestGateway;

  before(async () => {
    pair = await twoReplicas('lgw_usage', {
      REDIS_URL: SHARED_REDIS_URL,
      USAGE_FLUSH_INTERVAL_SECONDS: '3600',
      USAGE_REFRESH_INTERVAL_SECONDS: '0',
    });
    ({ a, b } = pair);
  });
  after(() => pair?.close());

  it("adds both replicas' counts exactly, each flush once", async () => {
    const t = await newTenant(a);
    const e = new Expected();
    await workload(a.url, t, 'shared', 0, e, true);
    await workload(b.url, t, 'shared', 1000, e, false);
    await workload(a.url, t, 'shared', 2000, e, false);
    await eventually(async () => {
      await Promise.all([a.app.get(UsageMeter).flush(), b.app.get(UsageMeter).flush()]);
      return e.matches(await todayOf(operator(b), t.name));
    }).catch(async () => assert.fail(`expected ${e}, got ${JSON.stringify(await todayOf(operator(a), t.name))}`));
    // Both read the same figures; more flushes change nothing.
    await a.app.get(UsageMeter).flush();
    await b.app.get(UsageMeter).flush();
    assert.ok(e.matches(await todayOf(operator(a), t.name)));
    assert.equal(e.rows, 10 + 3 * 3 * 7);

    // The same figures from the operator CLI (JSON and CSV), with the gateways running.
    const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: pair.databaseUrl, DATA_DIR: a.dataDir, NODE_NO_WARNINGS: '1' };
    delete env.ADMIN_API_KEY;
    const cli = (...args: string[]) => runAdmin(args, env);
    const json = await cli('usage', t.name, '--from', today());
    assert.equal(json.code, 0, json.stderr);
    const report = JSON.parse(json.stdout);
    assert.equal(report.database, t.name);
    assert.equal(report.periods.length, 1);
    assert.ok(e.matches(report.periods[0]), json.stdout);
    const csv = await cli('usage', t.name, '--from', today(), '--granularity', 'day', '--csv');
    assert.equal(csv.code, 0, csv.stderr);
    const lines = csv.stdout.trim().split('\r\n');
    assert.equal(lines.length, 2);
    assert.ok(
      lines[1].startsWith(
        `${t.name},day,${today()}T00:00:00.000Z,${e.read},${e.write},${e.read + e.write},${e.rows},${e.bytes},${e.queries},`,
      ),
      lines[1],
    );
    const fleet = await cli('usage', '--date', today(), '--sort', 'requests');
    assert.equal(fleet.code, 0, fleet.stderr);
    assert.equal(JSON.parse(fleet.stdout).databases[0].database, t.name);
    const bad = await cli('usage', t.name, '--granularity', 'week');
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /granularity/);
  });

  it('flushes what it counted when it shuts down', async () => {
    const t = await newTenant(a);
    const reader = new Api(b.url, t.reader.headers);
    for (let i = 0; i < 4; i++) assert.equal((await reader.get('/v1/table')).status, 200);
    const closing = b;
    b = undefined as unknown as TestGateway;
    await closing.close();
    assert.equal((await todayOf(operator(a), t.name)).read_requests, 4);
  });
});

describe('usage metering: a gateway killed between flushes [postgres]', { skip: !CATALOG_KINDS.includes('postgres') }, () => {
  const MAIN = program(path.resolve(__dirname, '../src/main.js'));
  let pg: Awaited<ReturnType<typeof createPgDatabase>>;
  let dataDir: string;
  const children: ChildProcess[] = [];

  async function startProcess(flushSeconds: number): Promise<{ url: string; child: ChildProcess; kill(): Promise<void> }> {
    const port = await freePort();
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PORT: String(port),
      DATABASE_URL: pg.url,
      DATA_DIR: dataDir,
      ADMIN_API_KEY: ADMIN_KEY,
      BOOTSTRAP_DATABASE: '',
      REDIS_URL: SHARED_REDIS_URL,
      USAGE_FLUSH_INTERVAL_SECONDS: String(flushSeconds),
      USAGE_REFRESH_INTERVAL_SECONDS: '0',
      NODE_NO_WARNINGS: '1',
    };
    delete env.BASE_PATH;
    const child = spawn(process.execPath, [MAIN], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    await eventually(async () => out.includes('listening on') || child.exitCode !== null, 600, 100);
    assert.equal(child.exitCode, null, `gateway exited at start:\n${out}`);
    return {
      url: `http://127.0.0.1:${port}`,
      child,
      async kill() {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
        await exited;
      },
    };
  }

  before(async () => {
    pg = await createPgDatabase('lgw_usage_crash');
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'lgw-usage-crash-'));
  });
  after(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await pg?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('loses at most what was counted since the last flush, and counts nothing twice', async () => {
    const g1 = await startProcess(1);
    const t = await newTenant(g1);
    const op = new Api(g1.url, { 'x-api-key': ADMIN_KEY });
    const flushed = new Expected();
    await workload(g1.url, t, 'crashy', 0, flushed, true);
    // Within a flush interval or a few, all of it is in the catalog (polled, not timed).
    await eventually(async () => flushed.matches(await todayOf(op, t.name)), 600, 100).catch(async () =>
      assert.fail(`expected ${flushed}, got ${JSON.stringify(await todayOf(op, t.name))}`),
    );
    // More requests, then SIGKILL at once: some of these may be lost (those not flushed yet), never counted twice.
    const extra = new Expected();
    await workload(g1.url, t, 'crashy', 5000, extra, false);
    await g1.kill();

    const g2 = await startProcess(1);
    const op2 = new Api(g2.url, { 'x-api-key': ADMIN_KEY });
    const after1 = await todayOf(op2, t.name);
    const fields: [string, keyof Expected][] = [
      ['read_requests', 'read'],
      ['write_requests', 'write'],
      ['rows_written', 'rows'],
      ['bytes_ingested', 'bytes'],
      ['queries', 'queries'],
    ];
    for (const [f, k] of fields) {
      const base = flushed[k] as number;
      const most = base + (extra[k] as number);
      assert.ok(after1[f] >= base && after1[f] <= most, `${f}: ${after1[f]} within [${base}, ${most}]`);
    }
    // The survivor's own requests count on top, exactly, once it flushes; the dead replica adds nothing later.
    const more = new Expected();
    const reader = new Api(g2.url, t.reader.headers);
    for (let i = 0; i < 3; i++) assert.equal((await reader.get('/v1/table')).status, 200);
    more.read += 3;
    await eventually(async () => (await todayOf(op2, t.name)).read_requests === after1.read_requests + more.read, 600, 100);
    const settled = await todayOf(op2, t.name);
    assert.equal(settled.write_requests, after1.write_requests);
    assert.equal(settled.rows_written, after1.rows_written);
  });
});
