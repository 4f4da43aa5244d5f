/**
 * Benchmark of the catalog path: one page of GET /v1/table (keyset pagination) with 1,000 and with 1,000,000 tables
 * in the database, and POST /v1/table/{id}/describe of a declared table, each through the gateway and through a
 * floor (bare Fastify + pg answering the same from the same Postgres, bench/floor-server.ts), in one process tree:
 * this process generates the load (autocannon), the gateway and the floor run as child processes on one Postgres.
 * The gateway runs as deployed: the Redis throttle (REDIS_URL), metrics and one request log line per request (to
 * /dev/null) all on.
 *
 *   npm run bench:list       (BENCH_PG_URL, default postgresql://postgres@127.0.0.1:5432/postgres;
 *                             BENCH_REDIS_URL, default redis://127.0.0.1:6379;
 *                             BENCH_SECONDS per run, default 5; BENCH_ROUNDS runs per case, median kept, default 3; BENCH_LARGE, default 1000000 (0: skip);
 *                             BENCH_WARMUP_SECONDS of load on each target before a case's first run, default 10;
 *                             BENCH_CPU_PROF=<dir>: write a CPU profile of the gateway there;
 *                             BENCH_METERING_COMPARE=0: skip the second gateway with usage metering off;
 *                             BENCH_GRANTS=0: skip the target with a scoped key (grants, docs/access-control.md))
 */
import { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import autocannon from 'autocannon';
import { ADMIN_URL, sql, urlFor } from './pg';
import { allocatorName, cpuSeconds, median, startChild, waitReady } from './child';
import { record } from './summary';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
/** Also measure each case with a key narrowed by grants (the same gateway), against the unscoped key. */
const COMPARE_GRANTS = process.env.BENCH_GRANTS !== '0';
/**
 * The scoped key's grants: select on the namespace of the described table, and on 14 of the 100 namespaces the list
 * tables are spread over (all after the middle page's start, so its page is full), plus two single tables: the list
 * query then merges 15 index ranges and a point lookup.
 */
const SCOPED_GRANTS = [
  { privileges: ['select'], on: { namespace: ['bench'] } },
  ...['ns6', 'ns7', 'ns8', 'ns9', ...Array.from({ length: 10 }, (_, i) => `ns6${i}`)].map((ns) => ({
    privileges: ['select'],
    on: { namespace: [ns] },
  })),
  { privileges: ['select'], on: { table: ['ns1', 't00000001'] } },
  { privileges: ['describe'], on: { table: ['ns2', 't00000002'] } },
];
const WARMUP_SECONDS = 1;
/**
 * Load on each target before a case's first measured run. A long-running server answers from optimised code; the
 * gateway's request path (framework, guards, validation, logging) takes V8 longer to optimise than the floor's few
 * functions, so its CPU per describe falls by about 15% over its first seconds of load (measured:
 * bench/runs/2026-history.md, "Warm-up").
 */
const CASE_WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 10);
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
/** Which cases to run (comma-separated: describe, list); all by default. */
const CASES = new Set((process.env.BENCH_CASES ?? 'describe,list').split(','));
const LARGE = Number(process.env.BENCH_LARGE ?? 1_000_000);
const SMALL = 1_000;
const PAGE = 100;
const CONNECTIONS = 10;
/** Runs per target and case, the median kept (see measureRounds). */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const COMPARE_METERING = process.env.BENCH_METERING_COMPARE !== '0';

interface Result {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  /** CPU time (user + system) the server process spent per answered request, in µs: steadier than req/s on a shared machine. */
  cpuUs: number;
}

async function load(
  server: ChildProcess,
  url: string,
  headers: Record<string, string>,
  method: 'GET' | 'POST' = 'GET',
  body?: string,
): Promise<Result> {
  const opts = { url, headers, method, body, connections: CONNECTIONS };
  await autocannon({ ...opts, duration: WARMUP_SECONDS }); // JIT, pools and caches warm, as in a long-running server
  const cpu0 = cpuSeconds(server.pid) * 1000;
  const r = await autocannon({ ...opts, duration: SECONDS });
  const cpu = cpuSeconds(server.pid) * 1000 - cpu0; // ms
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors + r.non2xx,
    cpuUs: (cpu * 1000) / r.requests.total,
  };
}

type Target = [
  key: string,
  target: string,
  server: ChildProcess,
  url: string,
  headers: Record<string, string>,
  method?: 'GET' | 'POST',
  body?: string,
];
/** `runs`: every run of the target, in round order (run i of each target was made in round i, beside the others'). */
type Row = Result & { label: string; target: string; runs: Result[] };

/**
 * Runs each target ROUNDS times, the targets taking turns (the order rotating each round), and keeps each target's
 * median run by req/s: one 5 s run swings by ±30% on a shared 2-core machine, which hides small differences such as
 * metering's cost.
 */
async function measureRounds(rows: Record<string, Row>, label: string, targets: Target[]): Promise<void> {
  for (const [, , , url, headers, method = 'GET', body] of targets) {
    if (CASE_WARMUP_SECONDS > 0) await autocannon({ url, headers, method, body, connections: CONNECTIONS, duration: CASE_WARMUP_SECONDS });
  }
  const runs = new Map<string, Result[]>();
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < targets.length; i++) {
      const [key, , server, url, headers, method, body] = targets[(i + round) % targets.length];
      runs.set(key, [...(runs.get(key) ?? []), await load(server, url, headers, method, body)]);
    }
  }
  for (const [key, target] of targets) {
    const sorted = [...runs.get(key)!].sort((a, b) => a.rps - b.rps);
    rows[key] = { label, target, ...sorted[Math.floor(sorted.length / 2)], runs: runs.get(key)! };
  }
}

/** Inserts tables rows up to `total`, spread over 100 namespaces, straight into the catalog. */
async function fill(url: string, databaseId: string, from: number, total: number): Promise<void> {
  await sql(
    url,
    `INSERT INTO tables (id, database_id, catalog, namespace_path, name, location, materialized_at)
     SELECT gen_random_uuid(), $1::uuid, '', 'ns' || (i % 100), 't' || lpad(i::text, 8, '0'), 'bench/' || i || '.lance', now()
       FROM generate_series($2::int, $3::int - 1) AS i`,
    [databaseId, from, total],
  );
  await sql(url, 'ANALYZE tables');
}

async function middleKey(url: string, databaseId: string, n: number): Promise<string> {
  const [row] = await sql(
    url,
    `SELECT namespace_path, name FROM tables WHERE database_id = $1 AND catalog = ''
      ORDER BY namespace_path, name OFFSET $2 LIMIT 1`,
    [databaseId, Math.floor(n / 2)],
  );
  return Buffer.from(JSON.stringify([row.namespace_path, row.name])).toString('base64url');
}

async function main(): Promise<void> {
  const dbName = `lgw_bench_${randomBytes(4).toString('hex')}`;
  await sql(ADMIN_URL, `CREATE DATABASE "${dbName}"`);
  const url = urlFor(dbName);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'lgw-bench-'));
  const children: ChildProcess[] = [];
  try {
    const gatewayPort = 24000 + Math.floor(Math.random() * 1000);
    const floorPort = gatewayPort + 1000;
    const adminKey = randomBytes(24).toString('hex');
    children.push(
      await startChild(
        path.join(__dirname, 'gateway-child.js'),
        {
          DATABASE_URL: url,
          PORT: String(gatewayPort),
          DATA_DIR: dataDir,
          ADMIN_API_KEY: adminKey,
          // The request line of every request is written (to /dev/null: the child's stdout is ignored).
          LOG_LEVEL: 'log',
          REDIS_URL,
          // Measure the request path, not the default per-database limit (1000 req/s): the counter still runs.
          RATE_LIMIT_LIMIT: '100000000',
        },
        { gateway: true, execArgv: process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [] },
      ),
    );
    await waitReady(`http://127.0.0.1:${gatewayPort}/readyz`);
    children.push(
      await startChild(path.join(__dirname, 'floor-server.js'), {
        DATABASE_URL: url,
        PORT: String(floorPort),
        STORAGE_ROOT: path.join(dataDir, 'tables'),
      }),
    );
    // The same gateway with usage metering off (issue 14: metering may cost the catalog path at most 5%), on the
    // same catalog, measured right after the metered one. BENCH_METERING_COMPARE=0 skips it.
    const unmeteredPort = gatewayPort + 2000;
    if (COMPARE_METERING) {
      children.push(
        await startChild(
          path.join(__dirname, 'gateway-child.js'),
          {
            DATABASE_URL: url,
            PORT: String(unmeteredPort),
            DATA_DIR: dataDir,
            ADMIN_API_KEY: adminKey,
            LOG_LEVEL: 'log',
            REDIS_URL,
            RATE_LIMIT_LIMIT: '100000000',
            USAGE_METERING: 'false',
          },
          { gateway: true },
        ),
      );
      await waitReady(`http://127.0.0.1:${unmeteredPort}/readyz`);
    }
    const off = `http://127.0.0.1:${unmeteredPort}`;

    const op = { 'x-api-key': adminKey, 'content-type': 'application/json' };
    await fetch(`http://127.0.0.1:${gatewayPort}/admin/v1/databases`, { method: 'POST', headers: op, body: '{"name":"bench"}' });
    const issue = async (role: string, grants?: unknown) =>
      (
        (await (
          await fetch(`http://127.0.0.1:${gatewayPort}/admin/v1/databases/bench/api-keys`, {
            method: 'POST',
            headers: op,
            body: JSON.stringify({ role, grants }),
          })
        ).json()) as { api_key: string }
      ).api_key;
    const headers = { 'x-api-key': await issue('read'), 'x-service-database': 'bench' };
    const scoped = { 'x-api-key': await issue('read', SCOPED_GRANTS), 'x-service-database': 'bench' };
    const writer = { 'x-api-key': await issue('write'), 'x-service-database': 'bench', 'content-type': 'application/json' };
    const [{ id: databaseId }] = await sql(url, `SELECT id FROM databases WHERE name = 'bench'`);
    const gw = `http://127.0.0.1:${gatewayPort}`;
    const fl = `http://127.0.0.1:${floorPort}`;

    const rows: Record<string, Row> = {};

    // Describe of a declared table (what a namespace-mode client asks before it writes), as the official clients
    // send it: a JSON body. Measured first, on a catalog of a few tables.
    const must = async (r: Promise<Response>) => {
      const res = await r;
      if (!res.ok) throw new Error(`${res.url}: ${res.status} ${await res.text()}`);
      return res;
    };
    await must(fetch(`${gw}/v1/namespace/bench/create`, { method: 'POST', headers: writer, body: '{}' }));
    await must(
      fetch(`${gw}/v1/table/bench$declared/declare`, { method: 'POST', headers: writer, body: '{"properties":{"owner":"bench"}}' }),
    );
    const describeBody = '{}';
    const dh = { ...headers, 'content-type': 'application/json' };
    {
      const g = await (
        await must(fetch(`${gw}/v1/table/bench$declared/describe`, { method: 'POST', headers: dh, body: describeBody }))
      ).json();
      const f = await (
        await must(fetch(`${fl}/describe?db=${databaseId}&id=bench$declared`, { method: 'POST', headers: dh, body: describeBody }))
      ).json();
      if (JSON.stringify(g) !== JSON.stringify(f))
        throw new Error(`gateway and floor disagree on describe: ${JSON.stringify(g)} vs ${JSON.stringify(f)}`);
    }
    if (CASES.has('describe')) {
      await measureRounds(rows, 'describe', [
        ['gateway describe', 'gateway', children[0], `${gw}/v1/table/bench$declared/describe`, dh, 'POST', describeBody],
        ...(COMPARE_METERING
          ? [['unmetered describe', 'no-meter', children[2], `${off}/v1/table/bench$declared/describe`, dh, 'POST', describeBody] as Target]
          : []),
        ...(COMPARE_GRANTS
          ? [
              [
                'scoped describe',
                'scoped',
                children[0],
                `${gw}/v1/table/bench$declared/describe`,
                { ...scoped, 'content-type': 'application/json' },
                'POST',
                describeBody,
              ] as Target,
            ]
          : []),
        ['floor describe', 'floor', children[1], `${fl}/describe?db=${databaseId}&id=bench$declared`, dh, 'POST', describeBody],
      ]);
    }

    let filled = 0;
    for (const n of [SMALL, LARGE].filter((n) => n > 0 && CASES.has('list'))) {
      const t0 = Date.now();
      await fill(url, databaseId, filled, n);
      filled = n;
      process.stderr.write(`filled ${n} tables in ${Date.now() - t0} ms\n`);
      const token = await middleKey(url, databaseId, n);
      // Sanity: both answer the same page.
      const g = (await (
        await fetch(`http://127.0.0.1:${gatewayPort}/v1/table?limit=${PAGE}&page_token=${token}`, { headers })
      ).json()) as any;
      const f = (await (
        await fetch(`http://127.0.0.1:${floorPort}/page?db=${databaseId}&limit=${PAGE}&after=${token}`, { headers })
      ).json()) as any;
      if (JSON.stringify(g.tables) !== JSON.stringify(f.tables) || g.tables.length !== PAGE) {
        throw new Error('gateway and floor disagree on the page');
      }
      if (COMPARE_GRANTS) {
        // The scoped key's page is as full, and only of its namespaces.
        const s = (await (await fetch(`${gw}/v1/table?limit=${PAGE}&page_token=${token}`, { headers: scoped })).json()) as any;
        const mine = (t: string) => /^ns(6|7|8|9|6\d)\$/.test(t) || t === 'ns1$t00000001' || t === 'ns2$t00000002';
        if (s.tables?.length !== PAGE || !s.tables.every(mine))
          throw new Error(`the scoped page is wrong: ${JSON.stringify(s).slice(0, 300)}`);
      }
      // The filled tables are all known to have data, so the gateway's page needs no look at storage.
      await measureRounds(rows, `list ${n}`, [
        [`gateway ${n}`, 'gateway', children[0], `${gw}/v1/table?limit=${PAGE}&page_token=${token}`, headers],
        ...(COMPARE_METERING
          ? [[`unmetered ${n}`, 'no-meter', children[2], `${off}/v1/table?limit=${PAGE}&page_token=${token}`, headers] as Target]
          : []),
        ...(COMPARE_GRANTS
          ? [[`scoped ${n}`, 'scoped', children[0], `${gw}/v1/table?limit=${PAGE}&page_token=${token}`, scoped] as Target]
          : []),
        [`floor ${n}`, 'floor', children[1], `${fl}/page?db=${databaseId}&limit=${PAGE}&after=${token}`, headers],
      ]);
    }

    const fmt = (x: number) => x.toFixed(1);
    console.log(
      `\nCatalog path: POST /v1/table/{id}/describe of a declared table; GET /v1/table, one page of ${PAGE} from the middle.` +
        `\n${CONNECTIONS} connections, ${CASE_WARMUP_SECONDS} s warm-up per target and case, then ${WARMUP_SECONDS} s warm-up + ${SECONDS} s per run, ${ROUNDS} runs per target in turn (median shown); gateway with Redis throttle, metrics, request log;` +
        ` node ${process.version}, ${os.cpus().length} cores; allocator: ${allocatorName()}`,
    );
    console.log('case            target      req/s    p50 ms  p99 ms  errors  cpu µs/req');
    for (const r of Object.values(rows)) {
      console.log(
        `${r.label.padEnd(15)} ${r.target.padEnd(8)} ${fmt(r.rps).padStart(9)} ${String(r.p50).padStart(8)} ${String(r.p99).padStart(7)} ${String(r.errors).padStart(7)} ${r.cpuUs.toFixed(0).padStart(11)}`,
      );
    }
    const ratio = (a: number, b: number) => (a / b).toFixed(2);
    console.log('\ngateway / floor: throughput (p50 floor/gateway; cpu per request floor/gateway):');
    for (const label of [...new Set(Object.values(rows).map((r) => r.label))]) {
      const g = Object.values(rows).find((r) => r.label === label && r.target === 'gateway')!;
      const f = Object.values(rows).find((r) => r.label === label && r.target === 'floor')!;
      // The same ratio paired by round: each round's gateway run against the floor's run beside it, median over rounds.
      // The machine's own speed drifts over tens of seconds on a shared VM (docs/performance.md, "Noise"), which the
      // separate medians above do not cancel.
      const paired = g.runs.map((r, i) => r.rps / f.runs[i].rps).sort((a, b) => a - b);
      const pairedRatio = median(paired);
      console.log(
        `  ${label.padEnd(15)} ${ratio(g.rps, f.rps)}   (p50 ${ratio(f.p50 || 0.5, g.p50 || 0.5)}; cpu ${ratio(f.cpuUs, g.cpuUs)}; ` +
          `paired by round ${pairedRatio.toFixed(2)} of ${paired.map((x) => x.toFixed(2)).join(' ')})`,
      );
      // The verdict is the paired ratio, as bench:fleet's: one slow stretch of the machine in one target's run moves the
      // separate medians (a full run on 2026-11-29: list at 1,000,000 0.64 apart, rounds 0.60 / 0.82 / 0.83).
      record({
        what: `catalog: ${label} (${CONNECTIONS} connections)`,
        gateway: `${fmt(g.rps)} req/s, p50 ${g.p50} ms, p99 ${g.p99} ms, ${g.cpuUs.toFixed(0)} µs CPU/req`,
        floor: `${fmt(f.rps)} req/s, p50 ${f.p50} ms, p99 ${f.p99} ms, ${f.cpuUs.toFixed(0)} µs CPU/req (Fastify + pg)`,
        ratio: `${pairedRatio.toFixed(2)} paired by round (medians apart ${ratio(g.rps, f.rps)}; CPU ${ratio(f.cpuUs, g.cpuUs)})`,
        target: '≥ 0.7',
        ok: pairedRatio >= 0.7,
      });
    }
    for (const label of [...new Set(Object.values(rows).map((r) => r.label))]) {
      const g = Object.values(rows).find((r) => r.label === label && r.target === 'gateway');
      const o = Object.values(rows).find((r) => r.label === label && r.target === 'no-meter');
      if (!g || !o) continue;
      console.log(`  metering on / off, ${label.padEnd(15)} ${ratio(g.rps, o.rps)}   (cpu per request off/on ${ratio(o.cpuUs, g.cpuUs)})`);
      record({
        what: `usage metering cost: ${label}`,
        gateway: `${fmt(g.rps)} req/s, ${g.cpuUs.toFixed(0)} µs CPU/req (metering on)`,
        floor: `${fmt(o.rps)} req/s, ${o.cpuUs.toFixed(0)} µs CPU/req (metering off)`,
        ratio: `${ratio(g.rps, o.rps)} req/s (CPU ${ratio(o.cpuUs, g.cpuUs)})`,
        target: '≥ 0.95',
        ok: g.rps / o.rps >= 0.95,
      });
    }
    for (const label of [...new Set(Object.values(rows).map((r) => r.label))]) {
      const g = Object.values(rows).find((r) => r.label === label && r.target === 'gateway');
      const sc = Object.values(rows).find((r) => r.label === label && r.target === 'scoped');
      if (!g || !sc) continue;
      console.log(
        `  scoped key / unscoped, ${label.padEnd(15)} ${ratio(sc.rps, g.rps)}   (cpu per request unscoped/scoped ${ratio(g.cpuUs, sc.cpuUs)})`,
      );
      record({
        what: `grants cost: ${label}`,
        gateway: `${fmt(sc.rps)} req/s, p99 ${sc.p99} ms, ${sc.cpuUs.toFixed(0)} µs CPU/req (key with ${SCOPED_GRANTS.length} grants)`,
        floor: `${fmt(g.rps)} req/s, p99 ${g.p99} ms, ${g.cpuUs.toFixed(0)} µs CPU/req (key without grants)`,
        ratio: `${ratio(sc.rps, g.rps)} req/s (CPU ${ratio(g.cpuUs, sc.cpuUs)})`,
        target: '≥ 0.9',
        ok: sc.rps / g.rps >= 0.9,
      });
    }
    if (rows[`gateway ${LARGE}`]) {
      console.log(`  gateway list at ${LARGE} / at ${SMALL}: ${ratio(rows[`gateway ${LARGE}`].rps, rows[`gateway ${SMALL}`].rps)}`);
      console.log(`  floor list at ${LARGE} / at ${SMALL}: ${ratio(rows[`floor ${LARGE}`].rps, rows[`floor ${SMALL}`].rps)}`);
    }
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    await sql(ADMIN_URL, `DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
