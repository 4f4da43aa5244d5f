/**
 * Benchmark of exactly-once writes (docs/idempotency.md): small inserts (BENCH_KEYED_ROWS rows, default 1,000) into
 * one table through the remote-dialect insert route, BENCH_KEYED_CONNECTIONS (default 4) at a time, with and without
 * a client x-request-id (which makes the gateway claim the request in the catalog before the write and store its
 * answer after). The two kinds alternate in BENCH_KEYED_ROUNDS rounds (default 12) of BENCH_KEYED_INSERTS inserts
 * each (default 300) against one gateway child, so that drift falls on both; the headline is the ratio of the median
 * rounds' throughput, keyed / unkeyed (target ≥ 0.95).
 *
 * The catalog is a fresh Postgres database (BENCH_PG_URL, default postgresql://postgres@127.0.0.1:5432/postgres).
 * Diagnostics: BENCH_LOG_SQL=1 makes Postgres log every statement of that database with its duration (the server's
 * log); BENCH_DEBUG=1 prints the CPU of each of the gateway's Postgres backends after every phase.
 */
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as arrow from 'apache-arrow';
import { ADMIN_URL, sql, urlFor } from './pg';
import { cpuSeconds, median, startChild } from './child';
import { record } from './summary';

const ROWS = Number(process.env.BENCH_KEYED_ROWS ?? 1000);
const CONNECTIONS = Number(process.env.BENCH_KEYED_CONNECTIONS ?? 4);
const ROUNDS = Number(process.env.BENCH_KEYED_ROUNDS ?? 12);
const INSERTS = Number(process.env.BENCH_KEYED_INSERTS ?? 300);

const body = (): Buffer =>
  Buffer.from(
    arrow.tableToIPC(
      new arrow.Table({
        id: arrow.vectorFromArray(
          Array.from({ length: ROWS }, (_, i) => i),
          new arrow.Float64(),
        ),
        label: arrow.vectorFromArray(
          Array.from({ length: ROWS }, (_, i) => `row-${i}`),
          new arrow.Utf8(),
        ),
      }),
      'stream',
    ),
  );

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lgw-bench-keyed-'));
  const port = 20000 + Math.floor(Math.random() * 20000);
  const pgName = `lgw_bench_keyed_${process.pid}`;
  await sql(ADMIN_URL, `CREATE DATABASE "${pgName}"`);
  if (process.env.BENCH_LOG_SQL) await sql(ADMIN_URL, `ALTER DATABASE "${pgName}" SET log_min_duration_statement = 0`);
  const gwDir = path.join(dir, 'gateway');
  const gw = await startChild(
    path.join(__dirname, 'gateway-child.js'),
    {
      PORT: String(port),
      DATA_DIR: gwDir,
      BOOTSTRAP_DATABASE: 'bench',
      LOG_LEVEL: 'error',
      RATE_LIMIT_LIMIT: '1000000',
      DATABASE_URL: urlFor(pgName),
      MAINTENANCE_ENABLED: 'false',
    },
    { gateway: true },
  );
  try {
    const { api_key } = JSON.parse(fs.readFileSync(path.join(gwDir, 'initial-api-key.json'), 'utf8'));
    const base = `http://127.0.0.1:${port}`;
    const payload = body();
    const headers = { 'x-api-key': api_key, 'x-service-database': 'bench', 'content-type': 'application/vnd.apache.arrow.stream' };
    const post = async (p: string, extra: Record<string, string> = {}) => {
      const r = await fetch(base + p, { method: 'POST', headers: { ...headers, ...extra }, body: payload });
      const text = await r.text();
      if (r.status !== 200) throw new Error(`${p}: ${r.status} ${text}`);
    };
    // Each phase writes a table of its own, so that both kinds meet tables of the same size (a table slows down as
    // its versions pile up).
    let tables = 0;
    const cpu = { plain: 0, keyed: 0 };
    // The catalog's side: CPU of the gateway's Postgres backends, and transactions committed, per kind.
    const pgCpu = { plain: 0, keyed: 0 };
    const commits = { plain: 0, keyed: 0 };
    const catalog = async () => {
      const pids = await sql<{ pid: number }>(ADMIN_URL, 'SELECT pid FROM pg_stat_activity WHERE datname = $1', [pgName]);
      const [db] = await sql<{ c: string }>(ADMIN_URL, 'SELECT xact_commit::text AS c FROM pg_stat_database WHERE datname = $1', [pgName]);
      if (process.env.BENCH_DEBUG) console.log(`  backends ${pids.map((p) => `${p.pid}:${cpuSeconds(p.pid)}`).join(' ')}`);
      return { cpu: pids.reduce((a, p) => a + (cpuSeconds(p.pid) || 0), 0), commits: Number(db.c) };
    };
    const phase = async (keyed: boolean): Promise<number> => {
      const table = `keyed_${tables++}`;
      await post(`/v1/table/${table}/create/`);
      let next = 0;
      const t0 = performance.now();
      const c0 = cpuSeconds(gw.pid);
      const k0 = await catalog();
      await Promise.all(
        Array.from({ length: CONNECTIONS }, async () => {
          while (next++ < INSERTS) await post(`/v1/table/${table}/insert/`, keyed ? { 'x-request-id': randomUUID() } : {});
        }),
      );
      const rate = INSERTS / ((performance.now() - t0) / 1000);
      cpu[keyed ? 'keyed' : 'plain'] += cpuSeconds(gw.pid) - c0;
      const k1 = await catalog();
      pgCpu[keyed ? 'keyed' : 'plain'] += k1.cpu - k0.cpu;
      // Less the two statements of catalog() itself (each pg_stat read commits one transaction).
      commits[keyed ? 'keyed' : 'plain'] += k1.commits - k0.commits;
      return rate;
    };
    // Warm-up (the engine's and the JIT's first runs are slower), then the timed rounds.
    await phase(false);
    await phase(true);
    for (const m of [cpu, pgCpu, commits]) m.plain = m.keyed = 0;
    const plain: number[] = [];
    const keyed: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      // Alternate which kind goes first, so that neither always follows the other.
      if (r % 2 === 0) {
        plain.push(await phase(false));
        keyed.push(await phase(true));
      } else {
        keyed.push(await phase(true));
        plain.push(await phase(false));
      }
    }
    const [p, k] = [median(plain), median(keyed)];
    const ratio = k / p;
    const paired = plain.map((x, i) => keyed[i] / x);
    const rows = await (
      await fetch(`${base}/v1/table/keyed_${tables - 1}/count_rows`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: '{}',
      })
    ).json();
    const expected = ROWS * (1 + INSERTS);
    console.log(
      `keyed writes: ${ROUNDS} rounds × ${INSERTS} inserts of ${ROWS} rows, ${CONNECTIONS} at a time, with and without x-request-id`,
    );
    console.log(`  unkeyed: ${plain.map((x) => x.toFixed(0)).join(' / ')} inserts/s (median ${p.toFixed(0)})`);
    console.log(`  keyed:   ${keyed.map((x) => x.toFixed(0)).join(' / ')} inserts/s (median ${k.toFixed(0)})`);
    const perInsert = (x: number) => ((x / (ROUNDS * INSERTS)) * 1000).toFixed(2);
    console.log(
      `  gateway CPU per insert (the engine's threads included): unkeyed ${perInsert(cpu.plain)} ms, keyed ${perInsert(cpu.keyed)} ms`,
    );
    console.log(`  catalog (Postgres backends) CPU per insert: unkeyed ${perInsert(pgCpu.plain)} ms, keyed ${perInsert(pgCpu.keyed)} ms`);
    const perInsertN = (x: number) => (x / (ROUNDS * INSERTS)).toFixed(2);
    console.log(`  catalog transactions per insert: unkeyed ${perInsertN(commits.plain)}, keyed ${perInsertN(commits.keyed)}`);
    const cpuRatio = (cpu.plain + pgCpu.plain) / (cpu.keyed + pgCpu.keyed);
    console.log(`  CPU ratio (gateway + catalog), unkeyed / keyed: ${cpuRatio.toFixed(2)}`);
    console.log(
      `  ratio keyed / unkeyed: ${ratio.toFixed(2)} (target ≥ 0.95); per round ${paired.map((x) => x.toFixed(2)).join(' / ')}; rows ${rows} (expected ${expected})`,
    );
    record({
      what: `inserts of ${ROWS} rows with x-request-id (outcome kept)`,
      gateway: `${k.toFixed(0)} inserts/s`,
      floor: `${p.toFixed(0)} inserts/s without a request id`,
      ratio: ratio.toFixed(2),
      target: '≥ 0.95',
      ok: ratio >= 0.95 && rows === expected,
    });
    if (rows !== expected) throw new Error(`table has ${rows} rows, expected ${expected}`);
  } finally {
    gw.removeAllListeners('exit');
    gw.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    fs.rmSync(dir, { recursive: true, force: true });
    await sql(ADMIN_URL, `DROP DATABASE IF EXISTS "${pgName}" WITH (FORCE)`).catch(() => undefined);
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
