/**
 * Benchmark of bounded write memory under concurrency: BENCH_WRITERS (default 8) official clients in remote mode
 * (`connect('db://…', {hostOverride, apiKey})`), each inserting BENCH_WRITE_MB (default 128) MB of Arrow data into its
 * own table at the same time, against a gateway child process with its default WRITE_MEMORY_BUDGET_BYTES (or the one
 * in the environment). Writes past the budget are answered 503 "Slow down" and the clients retry them (their retry
 * settings are raised, see RETRY below). Checks that every insert committed exactly once (row counts) and prints
 * MB/s, how many 503s were answered, and the gateway's RSS: before, peak (VmHWM) and highest sampled, and after.
 *
 *   npm run bench:writes    (BENCH_WRITERS, BENCH_WRITE_MB, BENCH_DIM default 128; BENCH_RSS_BOUND_MIB default 768)
 *
 * Allocator: the gateway child starts through scripts/start.sh like `npm start`: jemalloc when installed (peak
 * 709-723 MiB measured), LGW_ALLOCATOR=glibc for glibc with MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=1048576
 * (720-741 MiB). With glibc's defaults the engine's large, short-lived buffers are kept after each commit (its mmap
 * threshold grows up to 32 MiB once such buffers are freed, and each engine thread gets its own arena), so RSS
 * ratchets up commit after commit: 805-935 MiB measured with glibc's defaults.
 *
 * The catalog is a fresh Postgres database (BENCH_PG_URL, default postgresql://postgres@127.0.0.1:5432/postgres;
 * BENCH_PG_URL=embedded uses the embedded catalog).
 */
import { ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as lancedb from '@lancedb/lancedb';
import * as arrow from 'apache-arrow';
import { ADMIN_URL, sql } from './pg';
import { allocatorName, startChild } from './child';
import { record } from './summary';

const WRITERS = Number(process.env.BENCH_WRITERS ?? 8);
const WRITE_MB = Number(process.env.BENCH_WRITE_MB ?? 128);
const DIM = Number(process.env.BENCH_DIM ?? 128);
const RSS_BOUND_MIB = Number(process.env.BENCH_RSS_BOUND_MIB ?? 768);
const BATCH_ROWS = 16384;
const MB = 1e6;
/**
 * The clients' retries: a refused write is retried after 0.25 s, 0.5 s, 1 s … (+ up to 0.5 s jitter). The default
 * of 3 retries gives up after about 2 s, less than a queue of 8 writes of 128 MB takes on a small machine.
 */
const RETRY = { retries: 12, backoffFactor: 0.25, backoffJitter: 0.5 };

function status(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const text = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`${field}:\\s+(\\d+)`).exec(text)?.[1] ?? 0) / 1024;
}

function schema(): arrow.Schema {
  return new arrow.Schema([
    new arrow.Field('id', new arrow.Int64(), false),
    new arrow.Field('vector', new arrow.FixedSizeList(DIM, new arrow.Field('item', new arrow.Float32(), true)), false),
  ]);
}

/** `rows` rows of random vectors (incompressible, as real embeddings are), ids from 0. */
function makeTable(rows: number): arrow.Table {
  const sch = schema();
  const batches: arrow.RecordBatch[] = [];
  let s = 12345;
  const rnd = () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32) * 2 - 1;
  for (let from = 0; from < rows; from += BATCH_ROWS) {
    const n = Math.min(BATCH_ROWS, rows - from);
    const values = new Float32Array(n * DIM);
    for (let i = 0; i < values.length; i++) values[i] = rnd();
    const ids = new BigInt64Array(n);
    for (let i = 0; i < n; i++) ids[i] = BigInt(from + i);
    const child = arrow.makeData({ type: new arrow.Float32(), length: values.length, data: values });
    const vec = arrow.makeData({ type: sch.fields[1].type as arrow.FixedSizeList, length: n, child, nullCount: 0 });
    const idData = arrow.makeData({ type: new arrow.Int64(), length: n, data: ids });
    batches.push(new arrow.RecordBatch(sch, arrow.makeData({ type: new arrow.Struct(sch.fields), length: n, children: [idData, vec] })));
  }
  return new arrow.Table(batches);
}

/** Requests answered 503 on the insert route, from the gateway's Prometheus metrics. */
async function refusedInserts(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  let n = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('lgw_http_requests_total') && line.includes('status="503"') && line.includes('insert'))
      n += Number(line.split(' ').pop());
  }
  return n;
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lgw-bench-writes-'));
  const port = 20000 + Math.floor(Math.random() * 20000);
  const children: ChildProcess[] = [];
  const pgName = `lgw_bench_writes_${process.pid}`;
  const usePg = ADMIN_URL !== 'embedded';
  const pgUrl = Object.assign(new URL(usePg ? ADMIN_URL : 'postgresql://x/y'), { pathname: `/${pgName}` }).toString();
  if (usePg) await sql(ADMIN_URL, `CREATE DATABASE "${pgName}"`);
  try {
    const rows = Math.ceil((WRITE_MB * MB) / (8 + 4 * DIM));
    const data = makeTable(rows);
    const bytes = Buffer.from(arrow.tableToIPC(data, 'stream')).length;
    console.log(
      `concurrent writes: ${WRITERS} official clients (remote mode), each inserting ${(bytes / MB).toFixed(0)} MB ` +
        `(${rows} rows of ${DIM}-d float32 vectors) into its own table`,
    );

    const gwDir = path.join(dir, 'gateway');
    const gw = await startChild(
      path.join(__dirname, 'gateway-child.js'),
      {
        PORT: String(port),
        DATA_DIR: gwDir,
        BOOTSTRAP_DATABASE: 'bench',
        LOG_LEVEL: 'error',
        // Many requests in a short time from one database: the per-database rate limit is not what is measured.
        RATE_LIMIT_LIMIT: '1000000',
        ...(usePg ? { DATABASE_URL: pgUrl } : {}),
      },
      { gateway: true },
    );
    children.push(gw);
    const { api_key } = JSON.parse(fs.readFileSync(path.join(gwDir, 'initial-api-key.json'), 'utf8'));
    const base = `http://127.0.0.1:${port}`;
    const budget = process.env.WRITE_MEMORY_BUDGET_BYTES ? `${process.env.WRITE_MEMORY_BUDGET_BYTES} bytes` : 'default';
    const clients = await Promise.all(
      Array.from({ length: WRITERS }, () =>
        lancedb.connect('db://bench', { apiKey: api_key, hostOverride: base, clientConfig: { retryConfig: RETRY } }),
      ),
    );
    const tables = await Promise.all(clients.map((c, i) => c.createEmptyTable(`w${i}`, schema())));
    const idle = status(gw.pid!, 'VmRSS');

    let sampled = idle;
    const sampler = setInterval(() => (sampled = Math.max(sampled, status(gw.pid!, 'VmRSS'))), 25);
    const t0 = performance.now();
    const outcomes = await Promise.allSettled(tables.map((t) => t.add(data)));
    const seconds = (performance.now() - t0) / 1000;
    clearInterval(sampler);
    const peak = status(gw.pid!, 'VmHWM');
    const failed = outcomes.filter((o) => o.status === 'rejected') as PromiseRejectedResult[];
    const counts = await Promise.all(tables.map((t) => t.countRows()));
    const refused = await refusedInserts(base);
    await new Promise((r) => setTimeout(r, 2000));
    const afterRss = status(gw.pid!, 'VmRSS');
    const spill = path.join(gwDir, 'tmp');
    const leftovers = fs.existsSync(spill) ? fs.readdirSync(spill).length : 0;

    const alloc = allocatorName();
    console.log(`  budget: ${budget}; allocator: ${alloc}; ${refused} inserts answered 503 and retried by the clients`);
    console.log(
      `  ${((WRITERS * bytes) / MB).toFixed(0)} MB in ${seconds.toFixed(1)} s: ${((WRITERS * bytes) / MB / seconds).toFixed(0)} MB/s`,
    );
    console.log(
      `  gateway RSS: ${idle.toFixed(0)} MiB before, peak ${peak.toFixed(0)} MiB (VmHWM; highest sampled ${sampled.toFixed(0)} MiB), ` +
        `${afterRss.toFixed(0)} MiB 2 s after; bound ${RSS_BOUND_MIB} MiB`,
    );
    console.log(`  rows per table: ${counts.join(', ')} (expected ${rows} each); spill files left: ${leftovers}`);
    for (const c of clients) c.close();
    const problems: string[] = [];
    for (const f of failed) problems.push(`an insert failed: ${(f.reason as Error).message}`);
    counts.forEach((c, i) => c !== rows && problems.push(`table w${i} has ${c} rows, expected ${rows} (committed ${c / rows} times)`));
    if (peak > RSS_BOUND_MIB) problems.push(`gateway peak RSS ${peak.toFixed(0)} MiB is above the bound of ${RSS_BOUND_MIB} MiB`);
    if (leftovers > 0) problems.push(`${leftovers} spill files left behind`);
    record({
      what: `${WRITERS} clients × ${(bytes / MB).toFixed(0)} MB inserts at once`,
      gateway: `${((WRITERS * bytes) / MB / seconds).toFixed(0)} MB/s, peak ${peak.toFixed(0)} MiB, ${refused} × 503 retried`,
      floor: '—',
      ratio: counts.every((c) => c === rows) ? 'each committed once' : 'row counts wrong',
      target: `peak ≤ ${RSS_BOUND_MIB} MiB, exactly once`,
      ok: problems.length === 0,
    });
    if (problems.length) throw new Error(problems.join('\n'));
    console.log('  every insert committed exactly once; peak RSS within the bound');
  } finally {
    for (const c of children) {
      c.removeAllListeners('exit');
      c.kill('SIGTERM');
    }
    await new Promise((r) => setTimeout(r, 500));
    fs.rmSync(dir, { recursive: true, force: true });
    if (usePg) await sql(ADMIN_URL, `DROP DATABASE IF EXISTS "${pgName}" WITH (FORCE)`).catch(() => undefined);
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
