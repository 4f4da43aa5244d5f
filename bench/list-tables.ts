/**
 * Benchmark: one page of GET /v1/table (keyset pagination) with 1,000 and with 1,000,000 tables in the database,
 * through the gateway and through a floor (bare Fastify + pg running the same page query), all in one process tree:
 * this process generates the load (autocannon), the gateway and the floor run as child processes on one Postgres.
 *
 *   npm run bench            (BENCH_PG_URL, default postgresql://postgres@127.0.0.1:5432/postgres;
 *                             BENCH_SECONDS per run, default 5; BENCH_LARGE, default 1000000)
 */
import { ChildProcess, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import autocannon from 'autocannon';
import { ADMIN_URL, sql, urlFor } from './pg';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const LARGE = Number(process.env.BENCH_LARGE ?? 1_000_000);
const SMALL = 1_000;
const PAGE = 100;
const CONNECTIONS = 10;



function start(script: string, env: Record<string, string>): Promise<ChildProcess> {
  const child = fork(script, [], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
    child.once('message', () => resolve(child));
  });
}

async function waitReady(url: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} never became ready`);
}

interface Result {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

async function load(url: string, headers: Record<string, string>): Promise<Result> {
  const r = await autocannon({ url, headers, connections: CONNECTIONS, duration: SECONDS });
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.non2xx };
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
      await start(path.join(__dirname, 'gateway-child.js'), {
        DATABASE_URL: url,
        PORT: String(gatewayPort),
        DATA_DIR: dataDir,
        ADMIN_API_KEY: adminKey,
        LOG_LEVEL: 'warn',
        // Measure the request path, not the default per-database limit (1000 req/s).
        RATE_LIMIT_LIMIT: '100000000',
      }),
    );
    await waitReady(`http://127.0.0.1:${gatewayPort}/readyz`);
    children.push(await start(path.join(__dirname, 'floor-server.js'), { DATABASE_URL: url, PORT: String(floorPort) }));

    const op = { 'x-api-key': adminKey, 'content-type': 'application/json' };
    await fetch(`http://127.0.0.1:${gatewayPort}/admin/v1/databases`, { method: 'POST', headers: op, body: '{"name":"bench"}' });
    const key = (await (
      await fetch(`http://127.0.0.1:${gatewayPort}/admin/v1/databases/bench/api-keys`, { method: 'POST', headers: op, body: '{"role":"read"}' })
    ).json()) as { api_key: string };
    const [{ id: databaseId }] = await sql(url, `SELECT id FROM databases WHERE name = 'bench'`);
    const headers = { 'x-api-key': key.api_key, 'x-service-database': 'bench' };

    const rows: Record<string, Result & { tables: number; target: string }> = {};
    let filled = 0;
    for (const n of [SMALL, LARGE]) {
      const t0 = Date.now();
      await fill(url, databaseId, filled, n);
      filled = n;
      process.stderr.write(`filled ${n} tables in ${Date.now() - t0} ms\n`);
      const token = await middleKey(url, databaseId, n);
      // Sanity: both answer the same page.
      const g = (await (await fetch(`http://127.0.0.1:${gatewayPort}/v1/table?limit=${PAGE}&page_token=${token}`, { headers })).json()) as any;
      const f = (await (await fetch(`http://127.0.0.1:${floorPort}/page?db=${databaseId}&limit=${PAGE}&after=${token}`)).json()) as any;
      if (JSON.stringify(g.tables) !== JSON.stringify(f.tables) || g.tables.length !== PAGE) {
        throw new Error('gateway and floor disagree on the page');
      }
      rows[`gateway ${n}`] = { tables: n, target: 'gateway', ...(await load(`http://127.0.0.1:${gatewayPort}/v1/table?limit=${PAGE}&page_token=${token}`, headers)) };
      rows[`floor ${n}`] = { tables: n, target: 'floor', ...(await load(`http://127.0.0.1:${floorPort}/page?db=${databaseId}&limit=${PAGE}&after=${token}`, {})) };
    }

    const fmt = (x: number) => x.toFixed(1);
    console.log(`\nGET /v1/table, one page of ${PAGE} from the middle; ${CONNECTIONS} connections, ${SECONDS} s per run; node ${process.version}, ${os.cpus().length} cores`);
    console.log('target   tables     req/s    p50 ms  p99 ms  errors');
    for (const r of Object.values(rows)) {
      console.log(`${r.target.padEnd(8)} ${String(r.tables).padStart(9)} ${fmt(r.rps).padStart(9)} ${String(r.p50).padStart(8)} ${String(r.p99).padStart(7)} ${String(r.errors).padStart(7)}`);
    }
    const ratio = (a: number, b: number) => (a / b).toFixed(2);
    console.log('\nratios (throughput):');
    console.log(`  gateway / floor at ${SMALL}: ${ratio(rows[`gateway ${SMALL}`].rps, rows[`floor ${SMALL}`].rps)}`);
    console.log(`  gateway / floor at ${LARGE}: ${ratio(rows[`gateway ${LARGE}`].rps, rows[`floor ${LARGE}`].rps)}`);
    console.log(`  gateway at ${LARGE} / gateway at ${SMALL}: ${ratio(rows[`gateway ${LARGE}`].rps, rows[`gateway ${SMALL}`].rps)}`);
    console.log(`  floor at ${LARGE} / floor at ${SMALL}: ${ratio(rows[`floor ${LARGE}`].rps, rows[`floor ${SMALL}`].rps)}`);
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
