/**
 * Benchmark of table maintenance (docs/maintenance.md): ingest throughput through the official client in
 * remote mode while the gateway maintains the table being written (compaction, index optimization and cleanup jobs
 * running at the same time), against the same ingest into a table of a database whose maintenance is off. One
 * gateway (a child process on a fresh Postgres catalog), two databases: `maint_on` (MAINTENANCE_DELAY_MS short, a
 * cleanup retention of 0 s, so that every kind of maintenance runs during the writes) and `maint_off` (the operator
 * set `enabled: false`). The phases take turns (off, on, off, on, ...), each on a fresh table of 20,000 rows with an
 * IVF_PQ index, written by BENCH_WRITERS writers with small appends for BENCH_PHASE_SECONDS; the ratio is the median
 * throughput with maintenance over the median without. Target ≥ 0.8.
 *
 *   npm run bench:maintenance   (BENCH_ROUNDS, default 3; BENCH_PHASE_SECONDS, default 20; BENCH_WRITERS, default 4;
 *                                BENCH_ADD_ROWS, default 200; BENCH_DIM, default 64; BENCH_PG_URL)
 */
import { ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as lancedb from '@lancedb/lancedb';
import * as arrow from 'apache-arrow';
import { ADMIN_URL, sql } from './pg';
import { median, startChild } from './child';
import { waitForQuiet } from './quiet';
import { record } from './summary';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const PHASE_MS = Number(process.env.BENCH_PHASE_SECONDS ?? 20) * 1000;
const WRITERS = Number(process.env.BENCH_WRITERS ?? 4);
const ADD_ROWS = Number(process.env.BENCH_ADD_ROWS ?? 200);
const DIM = Number(process.env.BENCH_DIM ?? 64);
const ADMIN_KEY = 'bench-operator-key-0123456789';

function batch(from: number, rows: number): arrow.Table {
  let s = (from + 1) >>> 0;
  const rnd = () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32) * 2 - 1;
  const ids = new BigInt64Array(rows);
  const values = new Float32Array(rows * DIM);
  for (let i = 0; i < rows; i++) ids[i] = BigInt(from + i);
  for (let i = 0; i < values.length; i++) values[i] = rnd();
  const vecType = new arrow.FixedSizeList(DIM, new arrow.Field('item', new arrow.Float32(), true));
  const vec = arrow.makeVector(
    arrow.makeData({
      type: vecType,
      length: rows,
      nullCount: 0,
      child: arrow.makeData({ type: new arrow.Float32(), length: values.length, data: values }),
    }),
  );
  return new arrow.Table({ id: arrow.makeVector(ids), vector: vec });
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lgw-bench-maint-'));
  const port = 20000 + Math.floor(Math.random() * 20000);
  const pgName = `lgw_bench_maint_${process.pid}`;
  const pgUrl = Object.assign(new URL(ADMIN_URL), { pathname: `/${pgName}` }).toString();
  await sql(ADMIN_URL, `CREATE DATABASE "${pgName}"`);
  let gw: ChildProcess | undefined;
  try {
    gw = await startChild(
      path.join(__dirname, 'gateway-child.js'),
      {
        PORT: String(port),
        DATA_DIR: path.join(dir, 'gateway'),
        BOOTSTRAP_DATABASE: '',
        ADMIN_API_KEY: ADMIN_KEY,
        LOG_LEVEL: 'error',
        DATABASE_URL: pgUrl,
        JOBS_POLL_INTERVAL_MS: '200',
        MAINTENANCE_DELAY_MS: '1000',
        MAINTENANCE_SWEEP_INTERVAL_SECONDS: '0',
      },
      { gateway: true, execArgv: process.execArgv },
    );
    const base = `http://127.0.0.1:${port}`;
    const op = async (method: string, p: string, body?: unknown) => {
      const r = await fetch(base + p, {
        method,
        headers: { 'x-api-key': ADMIN_KEY, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await r.text();
      if (!r.ok) throw new Error(`${method} ${p}: ${r.status} ${text}`);
      return JSON.parse(text);
    };
    const keys: Record<string, string> = {};
    for (const [name, policy] of [
      ['maint_on', { cleanup_retention_seconds: 0 }],
      ['maint_off', { enabled: false }],
    ] as const) {
      await op('POST', '/admin/v1/databases', { name });
      keys[name] = (await op('POST', `/admin/v1/databases/${name}/api-keys`, { role: 'write' })).api_key;
      await op('PUT', `/admin/v1/databases/${name}/maintenance`, policy);
    }
    const conns = Object.fromEntries(
      Object.entries(keys).map(([name, key]) => [name, lancedb.connect(`db://${name}`, { apiKey: key, hostOverride: base })]),
    );
    const seed = batch(0, 20_000);
    const adds = Array.from({ length: 16 }, (_, i) => batch(1_000_000 + i * ADD_ROWS, ADD_ROWS));
    console.log(
      `maintenance bench: ${ROUNDS} rounds × (off, on), ${PHASE_MS / 1000} s each, ${WRITERS} writers appending ${ADD_ROWS} rows (${DIM}-d vectors)`,
    );

    const results: Record<string, number[]> = { maint_on: [], maint_off: [] };
    const jobCounts: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      for (const name of ['maint_off', 'maint_on']) {
        const db = await conns[name];
        const tableName = `t${round}`;
        const table = await db.createTable(tableName, seed);
        await table.createIndex('vector', { config: lancedb.Index.ivfPq({ numPartitions: 8, numSubVectors: 8 }) });
        await waitForQuiet();
        let rows = 0;
        const stop = performance.now() + PHASE_MS;
        const t0 = performance.now();
        await Promise.all(
          Array.from({ length: WRITERS }, async (_, w) => {
            const h = await db.openTable(tableName);
            for (let i = w; performance.now() < stop; i += WRITERS) {
              await h.add(adds[i % adds.length]);
              rows += ADD_ROWS;
            }
          }),
        );
        const seconds = (performance.now() - t0) / 1000;
        results[name].push(rows / seconds);
        const count = await table.countRows();
        if (count !== 20_000 + rows) throw new Error(`${name}.${tableName}: ${count} rows, expected ${20_000 + rows}`);
        let jobs = 0;
        if (name === 'maint_on') {
          const list = await fetch(`${base}/v1/jobs/list`, {
            method: 'POST',
            headers: { 'x-api-key': keys[name], 'x-service-database': name, 'content-type': 'application/json' },
            body: '{}',
          });
          const body = (await list.json()) as { jobs: Array<{ table_id: string[]; state: string }> };
          jobs = body.jobs.filter((j) => j.table_id.join('$') === tableName).length;
          jobCounts.push(jobs);
        }
        const s = await table.stats();
        console.log(
          `  round ${round + 1} ${name}: ${(rows / seconds).toFixed(0)} rows/s (${rows} rows in ${seconds.toFixed(1)} s), fragments now ${s.fragmentStats.numFragments}` +
            (name === 'maint_on' ? `, maintenance jobs of the table ${jobs}` : ''),
        );
      }
    }
    const on = median(results.maint_on);
    const off = median(results.maint_off);
    const ratio = on / off;
    console.log(
      `ingest with maintenance / without (medians): ${on.toFixed(0)} / ${off.toFixed(0)} rows/s = ${ratio.toFixed(2)} (target ≥ 0.8)`,
    );
    record({
      what: 'ingest while maintenance runs',
      gateway: `${on.toFixed(0)} rows/s (${jobCounts.join('/')} maintenance jobs per phase)`,
      floor: `${off.toFixed(0)} rows/s (maintenance off)`,
      ratio: ratio.toFixed(2),
      target: '≥ 0.8',
      ok: ratio >= 0.8,
    });
    for (const c of Object.values(conns)) (await c).close();
  } finally {
    if (gw) {
      gw.removeAllListeners('exit');
      gw.kill('SIGTERM');
    }
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
