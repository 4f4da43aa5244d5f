/**
 * Many tables (issue: data plane for many tables): does a k=10 vector query on a random one of many hot small tables
 * cost what the same query on one table costs?
 *
 * One database (Postgres catalog) with N small tables (200 rows × 16-d float vectors each, by default 1,000), written
 * in this process with @lancedb/lancedb straight into the database's folder under the gateway's storage root and
 * registered through `POST /v1/table/{id}/register`. Every table is queried once (all of them hot), then, alternating
 * round by round on one gateway with default settings (bar a rate limit high enough not to throttle one database),
 * 8 connections send `POST /v1/table/{id}/query/` (the official client's remote query: `vector`, `k`):
 *  - every query to one table, against
 *  - each query to a random one of the N.
 * Prints q/s, p50 and p99 of each, the ratio random / one (the target is ≥ 0.8), the handles opened during each run
 * (lgw_table_handle_opens_total: a hot table is not reopened) and the shared session's caches. Then, on a second gateway
 * on the same catalog and tables with TABLE_HANDLE_IDLE_SECONDS shortened to BENCH_IDLE_SECONDS (so that the run need
 * not wait five minutes) and without the usage refresher, its idle RSS: fresh (one table queried), with every table
 * hot, and after the handles expired, each once the process went quiet.
 *
 *   npm run bench:tables   (BENCH_TABLES, default 1000; BENCH_ROUNDS, default 5; BENCH_SECONDS per run, default 3;
 *                           BENCH_CONNECTIONS, default 8; BENCH_IDLE_SECONDS, default 20: the second gateway's idle time
 *                           (0: no second gateway);
 *                           BENCH_PG_URL as bench:list; BENCH_GATEWAY_CHILD: another build's gateway-child.js;
 *                           BENCH_GW_ENV, e.g. "TABLE_HANDLE_CACHE_SIZE=128", as every benchmark)
 */
import { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import * as lancedb from '@lancedb/lancedb';
import * as arrow from 'apache-arrow';
import autocannon from 'autocannon';
import { allocatorName, cpuSeconds, must, pool, rssMiB, startChild } from './child';
import { ADMIN_URL, sql, urlFor } from './pg';
import { waitForQuiet } from './quiet';
import { record } from './summary';

const TABLES = Number(process.env.BENCH_TABLES ?? 1000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 8);
const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 20);
const ROWS = 200;
const DIM = 16;
const DATABASE = 'many';

interface Result {
  qps: number;
  p50: number;
  p99: number;
  errors: number;
  cpuUs: number;
  opens: number;
}

/** One table's rows: ids and random 16-d float vectors. */
function rowsOf(): arrow.Table {
  const values = Float32Array.from({ length: ROWS * DIM }, () => Math.random());
  const vector = arrow.makeVector(
    arrow.makeData({
      type: new arrow.FixedSizeList(DIM, new arrow.Field('item', new arrow.Float32(), true)),
      length: ROWS,
      nullCount: 0,
      child: arrow.makeData({ type: new arrow.Float32(), length: ROWS * DIM, data: values }),
    }),
  );
  return new arrow.Table({ id: arrow.makeVector(Int32Array.from({ length: ROWS }, (_, i) => i)), vector });
}

/** The gateway's Prometheus samples of `name` (summed over labels), NaN when absent. */
async function metric(base: string, name: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  let sum = NaN;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name} `) || line.startsWith(`${name}{`)) sum = (Number.isNaN(sum) ? 0 : sum) + Number(line.split(' ').pop());
  }
  return sum;
}

async function main(): Promise<void> {
  const dbName = `lgw_bench_tables_${randomBytes(4).toString('hex')}`;
  await sql(ADMIN_URL, `CREATE DATABASE "${dbName}"`);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'lgw-bench-tables-'));
  const storageRoot = path.join(dataDir, 'tables');
  const adminKey = randomBytes(24).toString('hex');
  const port = 28000 + Math.floor(Math.random() * 1000);
  let base = `http://127.0.0.1:${port}`;
  let gateway: ChildProcess | undefined;
  const start = (at: number, env: Record<string, string> = {}) =>
    startChild(
      process.env.BENCH_GATEWAY_CHILD ?? path.join(__dirname, 'gateway-child.js'),
      {
        PORT: String(at),
        DATABASE_URL: urlFor(dbName),
        DATA_DIR: dataDir,
        STORAGE_ROOT: storageRoot,
        ADMIN_API_KEY: adminKey,
        LOG_LEVEL: 'error',
        // One database takes every query: its default rate limit (1,000 a second) would throttle the one-table runs.
        RATE_LIMIT_LIMIT: '1000000000',
        ...env,
      },
      { gateway: true },
    );
  try {
    gateway = await start(port);
    let pid = gateway.pid;
    const op = { 'x-api-key': adminKey, 'content-type': 'application/json' };
    await must(fetch(`${base}/admin/v1/databases`, { method: 'POST', headers: op, body: JSON.stringify({ name: DATABASE }) }));
    const key = (
      await must(
        fetch(`${base}/admin/v1/databases/${DATABASE}/api-keys`, { method: 'POST', headers: op, body: JSON.stringify({ role: 'write' }) }),
      )
    ).api_key as string;
    const headers = { 'x-api-key': key, 'x-service-database': DATABASE, 'content-type': 'application/json' };

    // ---- the tables: written here into the database's folder, registered through the gateway
    const t0 = Date.now();
    const names = Array.from({ length: TABLES }, (_, i) => `t${i}`);
    const local = await lancedb.connect(path.join(storageRoot, DATABASE));
    for (const name of names) (await local.createTable(name, rowsOf())).close();
    local.close();
    const t1 = Date.now();
    await pool(names, 8, async (name) => {
      await must(
        fetch(`${base}/v1/table/${name}/register`, { method: 'POST', headers, body: JSON.stringify({ location: `${name}.lance` }) }),
      );
    });
    process.stderr.write(
      `${TABLES} tables of ${ROWS} rows × ${DIM}-d written in ${((t1 - t0) / 1000).toFixed(1)} s, registered in ${((Date.now() - t1) / 1000).toFixed(1)} s\n`,
    );

    const vector = () => Array.from({ length: DIM }, () => Math.random());
    const query = (table: string) => ({
      method: 'POST',
      path: `/v1/table/${table}/query/`,
      headers: { ...headers }, // autocannon adds the body's content-length to the request's headers
      body: JSON.stringify({ vector: vector(), k: 10 }),
    });
    const q0 = query('t0');
    const check = await fetch(`${base}${q0.path}`, { method: 'POST', headers: q0.headers, body: q0.body });
    const answer = arrow.tableFromIPC(Buffer.from(await check.arrayBuffer()));
    if (check.status !== 200 || answer.numRows !== 10) throw new Error(`unexpected query answer: ${check.status}, ${answer.numRows} rows`);

    const load = async (pick: () => string, seconds: number): Promise<Result> => {
      const opens0 = await metric(base, 'lgw_table_handle_opens_total');
      const cpu0 = cpuSeconds(pid);
      const r = await autocannon({
        url: base,
        connections: CONNECTIONS,
        duration: seconds,
        requests: [{ setupRequest: (req: any) => Object.assign(req, query(pick())) }] as any,
      });
      const cpu = cpuSeconds(pid) - cpu0;
      return {
        qps: r.requests.average,
        p50: r.latency.p50,
        p99: r.latency.p99,
        errors: r.errors + r.non2xx,
        cpuUs: (cpu * 1e6) / Math.max(1, r.requests.total),
        opens: (await metric(base, 'lgw_table_handle_opens_total')) - opens0,
      };
    };
    const one = () => 't0';
    const random = () => names[Math.floor(Math.random() * names.length)];

    /** One query of every table. */
    const touchAll = () =>
      pool(names, CONNECTIONS, async (name) => {
        const q = query(name);
        const r = await fetch(`${base}${q.path}`, { method: 'POST', headers: q.headers, body: q.body });
        await r.arrayBuffer();
        if (r.status !== 200) throw new Error(`query of ${name}: ${r.status}`);
      });

    // ---- every table hot, and the JIT warm
    await touchAll();
    await load(random, 3);
    await load(one, 3);

    // ---- one table against a random one of the N, alternating
    const runs = { one: [] as Result[], random: [] as Result[] };
    for (let round = 0; round < ROUNDS; round++) {
      const order: Array<'one' | 'random'> = round % 2 ? ['random', 'one'] : ['one', 'random'];
      for (const which of order) {
        // Short runs taking turns (rather than long ones) so that other load on the machine falls on both alike.
        await waitForQuiet({ seconds: 1, maxSeconds: 3 });
        runs[which].push(await load(which === 'one' ? one : random, SECONDS));
      }
    }
    const kept = await metric(base, 'lgw_table_handles');
    const keptBytes = await metric(base, 'lgw_table_handle_bytes');
    const sessionBytes = await metric(base, 'lgw_lance_session_cache_bytes');
    const sessionItems = await metric(base, 'lgw_lance_session_cache_items');
    gateway.kill('SIGTERM');
    await new Promise((r) => gateway?.once('exit', r));

    // ---- memory, on a gateway of its own whose handles expire after IDLE_SECONDS: fresh, every table hot, expired
    let rssFresh = NaN;
    let rssHot = NaN;
    let rssExpired = NaN;
    let keptHot = NaN;
    let keptAfter = NaN;
    let sessionAfter = NaN;
    if (IDLE_SECONDS > 0) {
      // Without the usage refresher, whose first pass over the newly registered tables is not what tenants leave behind.
      gateway = await start(port + 1, { TABLE_HANDLE_IDLE_SECONDS: String(IDLE_SECONDS), USAGE_REFRESH_INTERVAL_SECONDS: '0' });
      pid = gateway.pid;
      base = `http://127.0.0.1:${port + 1}`;
      const quiet = () => sleep(11_000); // the heap release after a busy spell: about ten quiet seconds
      await load(one, 2);
      await quiet();
      rssFresh = rssMiB(pid);
      await touchAll();
      keptHot = await metric(base, 'lgw_table_handles');
      await quiet();
      rssHot = rssMiB(pid);
      // Expired handles are closed by a sweep (every quarter of the idle time), and the session let go with the last.
      const until = Date.now() + IDLE_SECONDS * 2000 + 10_000;
      do {
        await sleep(2000);
        keptAfter = await metric(base, 'lgw_table_handles');
        sessionAfter = await metric(base, 'lgw_lance_session_cache_bytes');
      } while (!(keptAfter === 0 && sessionAfter === 0) && Date.now() < until);
      await quiet();
      rssExpired = rssMiB(pid);
    }

    const median = (rs: Result[]): Result => [...rs].sort((a, b) => a.qps - b.qps)[Math.floor(rs.length / 2)];
    const fmt = (r: Result) =>
      `${Math.round(r.qps).toLocaleString('en-US')} q/s, p50 ${r.p50} ms, p99 ${r.p99} ms, ${Math.round(r.cpuUs)} µs CPU/query, ` +
      `${r.opens} handles opened${r.errors ? `, ${r.errors} errors` : ''}`;
    const [o, r] = [median(runs.one), median(runs.random)];
    const ratio = r.qps / o.qps;
    const mib = (b: number) => `${(b / 1024 ** 2).toFixed(1)} MiB`;
    console.log(
      `\nMany tables: ${TABLES.toLocaleString('en-US')} tables × ${ROWS} rows × ${DIM}-d, k=10 vector queries, ${CONNECTIONS} connections, ` +
        `medians of ${ROUNDS} runs of ${SECONDS} s; allocator: ${allocatorName()}`,
    );
    console.log(`  one table:                 ${fmt(o)}`);
    console.log(`  a random one of ${TABLES.toLocaleString('en-US')}:`.padEnd(29) + ` ${fmt(r)}`);
    console.log(
      `  ratio random / one: ${ratio.toFixed(2)} (runs ${runs.random.map((x, i) => (x.qps / runs.one[i].qps).toFixed(2)).join(' / ')}), ` +
        `p99 ×${(r.p99 / Math.max(1, o.p99)).toFixed(2)}`,
    );
    console.log(
      `  after the runs: kept handles ${kept} (${mib(keptBytes)} estimated); session caches ${mib(sessionBytes)}, ${sessionItems} entries`,
    );
    if (IDLE_SECONDS > 0) {
      console.log(
        `  idle RSS (a second gateway, TABLE_HANDLE_IDLE_SECONDS=${IDLE_SECONDS}): fresh ${rssFresh.toFixed(0)} MiB; every table hot ` +
          `(${keptHot} handles) ${rssHot.toFixed(0)} MiB (+${(rssHot - rssFresh).toFixed(0)}); after the handles expired ` +
          `${rssExpired.toFixed(0)} MiB (+${(rssExpired - rssFresh).toFixed(0)}), ${keptAfter} handles kept, session caches ${mib(sessionAfter)}`,
      );
    }
    record({
      what: `many tables: k=10 query, a random one of ${TABLES} hot small tables`,
      gateway: fmt(r),
      floor: `one table: ${fmt(o)}`,
      ratio: ratio.toFixed(2),
      target: '≥ 0.8',
      ok: ratio >= 0.8,
    });
    if (IDLE_SECONDS > 0) {
      record({
        what: `many tables: idle RSS with ${TABLES} tables hot / after the handles expired`,
        gateway: `${rssHot.toFixed(0)} / ${rssExpired.toFixed(0)} MiB`,
        floor: `fresh: ${rssFresh.toFixed(0)} MiB`,
        ratio: `+${(rssHot - rssFresh).toFixed(0)} / +${(rssExpired - rssFresh).toFixed(0)} MiB`,
        target: 'after expiry ≤ +32 MiB',
        ok: rssExpired - rssFresh <= 32,
      });
    }
  } finally {
    gateway?.kill('SIGTERM');
    await sleep(500);
    await sql(ADMIN_URL, `DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`).catch(() => undefined);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
