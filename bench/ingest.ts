/**
 * Benchmark of the data plane:
 *  1. ingest: a ≥1 GB Arrow IPC stream uploaded through `POST /v1/tables/{name}` (streamed, chunked, back-pressured),
 *     against writing the same record batches in-process with @lancedb/lancedb (same chunking: one `createTable`, then
 *     one `add` per chunk of about the gateway's chunk size); reports MB/s of both, their ratio, and the gateway's
 *     peak RSS (VmHWM of its process);
 *  2. vector query: nearest-10 queries (brute force, no index) on a smaller table through the gateway with the
 *     official client in remote mode, against the same query in-process; reports median and p95 latency and the ratio.
 *
 *   npm run bench:ingest    (BENCH_INGEST_MB, default 1100; BENCH_INGEST_REPEATS uploads after the measured one, default 2; BENCH_BATCH_ROWS, default 16384; BENCH_DIM, default 128;
 *                            BENCH_QUERY_ROWS, default 100000; BENCH_QUERIES, default 150;
 *                            BENCH_QUERY_WARMUP, default 10;
 *                            BENCH_STORAGE=local (default) or s3: tables of both sides on a local S3-compatible
 *                            server (s3rver, started here), the gateway with STORAGE_ROOT=s3://…)
 *   Diagnostics: the gateway child starts through scripts/start.sh like `npm start` (jemalloc when installed;
 *   LGW_ALLOCATOR=glibc for glibc's settings); BENCH_GW_ENV="NAME=VALUE …" adds variables to the child only (e.g.
 *   MALLOC_CONF); BENCH_GW_EXEC_ARGV adds node flags (--cpu-prof);
 *   BENCH_GATEWAY_CHILD runs another build's gateway-child.js against the same client and baseline. The query phase
 *   also times the query in this process on the files the gateway wrote (data layout vs serving path).
 *
 * The gateway runs as a child process on a fresh Postgres catalog database (BENCH_PG_URL, default
 * postgresql://postgres@127.0.0.1:5432/postgres; BENCH_PG_URL=embedded uses the embedded catalog, whose start-up
 * dominates the peak RSS); this process is the client and the in-process baseline.
 */
import { ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import * as lancedb from '@lancedb/lancedb';
import * as arrow from 'apache-arrow';
import { ADMIN_URL, sql } from './pg';
import S3rver = require('s3rver');
import { allocatorName, cpuSeconds, startChild } from './child';
import { waitForQuiet } from './quiet';
import { record } from './summary';
import { SCHEMA_WORKER_IDLE_MS } from '../src/engine/arrow/arrow-schema-guard';

const INGEST_MB = Number(process.env.BENCH_INGEST_MB ?? 1100);
const BATCH_ROWS = Number(process.env.BENCH_BATCH_ROWS ?? 16384);
const DIM = Number(process.env.BENCH_DIM ?? 128);
const QUERY_ROWS = Number(process.env.BENCH_QUERY_ROWS ?? 100_000);
const QUERIES = Number(process.env.BENCH_QUERIES ?? 150);
/**
 * Queries per target before the timed ones (taking turns too): the first few dozen after the writes above run
 * slower through the gateway and would otherwise sway the median (measured: bench/runs/2026-history.md, "Measuring
 * the data plane").
 */
const QUERY_WARMUP = Number(process.env.BENCH_QUERY_WARMUP ?? 10);
/** The gateway's default ingest chunk (dataplane.constants.ts); the baseline commits the same way. */
const CHUNK_BYTES = Number(process.env.ARROW_INGEST_CHUNK_BYTES ?? 16 * 1024 * 1024);
const POOL = 8;
/** Uploads of the same size after the measured one, each dropped after: the peak must hold over repeated uploads (issue 37). */
const REPEATS = Number(process.env.BENCH_INGEST_REPEATS ?? 2);

const MB = 1e6;
const STORAGE = process.env.BENCH_STORAGE === 's3' ? 's3' : 'local';

function rssMiB(pid: number): number {
  const kb = Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  return kb / 1024;
}

function schema(): arrow.Schema {
  return new arrow.Schema([
    new arrow.Field('id', new arrow.Int64(), false),
    new arrow.Field('vector', new arrow.FixedSizeList(DIM, new arrow.Field('item', new arrow.Float32(), true)), false),
  ]);
}

/** A record batch of random vectors; ids start at `from`. */
function makeBatch(from: number, rows: number, seed: number): arrow.RecordBatch {
  let s = seed >>> 0 || 1;
  const rnd = () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32) * 2 - 1;
  const values = new Float32Array(rows * DIM);
  for (let i = 0; i < values.length; i++) values[i] = rnd();
  const ids = new BigInt64Array(rows);
  for (let i = 0; i < rows; i++) ids[i] = BigInt(from + i);
  const sch = schema();
  const listType = sch.fields[1].type as arrow.FixedSizeList;
  const child = arrow.makeData({ type: new arrow.Float32(), length: values.length, data: values });
  const vec = arrow.makeData({ type: listType, length: rows, child, nullCount: 0 });
  const idData = arrow.makeData({ type: new arrow.Int64(), length: rows, data: ids });
  return new arrow.RecordBatch(sch, arrow.makeData({ type: new arrow.Struct(sch.fields), length: rows, children: [idData, vec] }));
}

/** IPC stream bytes: the schema message, then one message per batch (written by apache-arrow, uncompressed). */
function encode(batches: arrow.RecordBatch[]): { head: Buffer; bodies: Buffer[] } {
  const head = Buffer.from(arrow.tableToIPC(new arrow.Table(schema()), 'stream'));
  // A schema-only stream is schema + EOS (8 bytes): keep the schema part.
  const schemaPart = head.subarray(0, head.length - 8);
  const bodies = batches.map((b) => {
    const one = Buffer.from(arrow.tableToIPC(new arrow.Table([b]), 'stream'));
    return one.subarray(schemaPart.length, one.length - 8);
  });
  return { head: schemaPart, bodies };
}

function peakRssMiB(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return kb / 1024;
}

/** Streams `head` + `count` batch messages (cycling through the pool) as a chunked upload, with back-pressure. */
function upload(
  url: string,
  headers: Record<string, string>,
  head: Buffer,
  bodies: Buffer[],
  count: number,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: 'POST', headers: { ...headers, 'content-type': 'application/vnd.apache.arrow.stream' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    let i = 0;
    const pump = () => {
      while (i < count) {
        const ok = req.write(bodies[i % bodies.length]);
        i++;
        if (!ok) return void req.once('drain', pump);
      }
      req.end(Buffer.from([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]));
    };
    req.write(head);
    pump();
  });
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length - 1) * p))];

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lgw-bench-ingest-'));
  const port = 20000 + Math.floor(Math.random() * 20000);
  const children: ChildProcess[] = [];
  const pgName = `lgw_bench_ingest_${process.pid}`;
  const usePg = ADMIN_URL !== 'embedded';
  const pgUrl = Object.assign(new URL(usePg ? ADMIN_URL : 'postgresql://x/y'), { pathname: `/${pgName}` }).toString();
  if (usePg) await sql(ADMIN_URL, `CREATE DATABASE "${pgName}"`);
  // BENCH_STORAGE=s3: one local S3-compatible server for both sides (the same HTTP path for the engine).
  let s3: { close(): Promise<void> } | undefined;
  let storageEnv: Record<string, string> = {};
  let localUri = path.join(dir, 'local');
  let localOptions: Record<string, string> | undefined;
  if (STORAGE === 's3') {
    const server = new S3rver({
      port: 0,
      address: '127.0.0.1',
      silent: true,
      directory: path.join(dir, 's3'),
      configureBuckets: [{ name: 'bench' }],
    });
    const { port: s3Port } = await server.run();
    s3 = server;
    localOptions = {
      aws_access_key_id: 'S3RVER',
      aws_secret_access_key: 'S3RVER',
      aws_region: 'us-east-1',
      aws_endpoint: `http://127.0.0.1:${s3Port}`,
      allow_http: 'true',
      aws_virtual_hosted_style_request: 'false',
    };
    storageEnv = { STORAGE_ROOT: 's3://bench/gateway', STORAGE_OPTIONS: JSON.stringify(localOptions) };
    localUri = 's3://bench/local';
    console.log("storage: s3 (s3rver on this machine; both sides write through Lance's S3 code path)");
  }
  try {
    // ---- data: a pool of distinct batches, cycled to the target size
    const pool = Array.from({ length: POOL }, (_, i) => makeBatch(i * BATCH_ROWS, BATCH_ROWS, i + 1));
    const { head, bodies } = encode(pool);
    const count = Math.ceil((INGEST_MB * MB) / bodies[0].length);
    const total = head.length + count * bodies[0].length;
    const rows = count * BATCH_ROWS;
    console.log(`gateway allocator: ${allocatorName()}`);
    console.log(`ingest: ${(total / MB).toFixed(0)} MB, ${count} batches × ${BATCH_ROWS} rows (${rows} rows, ${DIM}-d float32 vectors)`);

    // ---- gateway (child process, embedded catalog)
    const gwDir = path.join(dir, 'gateway');
    // BENCH_GATEWAY_CHILD: another build's gateway-child.js (to compare commits with the same client and baseline).
    const gw = await startChild(
      process.env.BENCH_GATEWAY_CHILD ?? path.join(__dirname, 'gateway-child.js'),
      {
        PORT: String(port),
        DATA_DIR: gwDir,
        BOOTSTRAP_DATABASE: 'bench',
        LOG_LEVEL: 'error',
        ...(usePg ? { DATABASE_URL: pgUrl } : {}),
        ...storageEnv,
      },
      { gateway: true, execArgv: process.execArgv },
    );
    children.push(gw);
    const { api_key } = JSON.parse(fs.readFileSync(path.join(gwDir, 'initial-api-key.json'), 'utf8'));
    const headers = { 'x-api-key': api_key, 'x-service-database': 'bench' };
    const base = `http://127.0.0.1:${port}`;
    // Idle as a replica is between requests: after start-up and one small upload, dropped (what the first write
    // loads once — the catalog's query compiler, the engine's threads — is then resident), and a quiet spell long
    // enough for the Arrow schema worker to stop (SCHEMA_WORKER_IDLE_MS; RSS 3 s after the upload, the worker still
    // up, is printed too). BENCH_WARMUP=0 measures right after start-up instead.
    if (process.env.BENCH_WARMUP !== '0') {
      const w = await upload(`${base}/v1/tables/warmup`, headers, head, bodies, 1);
      if (w.status !== 201) throw new Error(`warm-up upload failed: ${w.status} ${w.body}`);
      const d = await fetch(`${base}/v1/table/warmup/drop`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: '{}',
      });
      if (!d.ok) throw new Error(`warm-up drop failed: ${d.status}`);
    }
    await new Promise((r) => setTimeout(r, 3000));
    const rssWarm = rssMiB(gw.pid!);
    if (process.env.BENCH_WARMUP !== '0') await new Promise((r) => setTimeout(r, SCHEMA_WORKER_IDLE_MS));
    const rssBefore = rssMiB(gw.pid!);

    // Each timed phase starts on a quiet machine, what the one before wrote on disk (bench/quiet.ts): without the
    // sync the ingest ratio swung far more (measured: bench/runs/2026-history.md, "Measuring the data plane").
    await waitForQuiet();
    let sampled = rssMiB(gw.pid!);
    const sampler = setInterval(() => (sampled = Math.max(sampled, rssMiB(gw.pid!))), 50);
    const cpu0 = { gw: cpuSeconds(gw.pid!), me: cpuSeconds(process.pid) };
    const t0 = performance.now();
    const res = await upload(`${base}/v1/tables/ingest`, headers, head, bodies, count).finally(() => clearInterval(sampler));
    const gwSeconds = (performance.now() - t0) / 1000;
    if (res.status !== 201) throw new Error(`upload failed: ${res.status} ${res.body}`);
    const gwPeak = peakRssMiB(gw.pid!);
    const gwCpu = cpuSeconds(gw.pid!) - cpu0.gw;
    const clientCpu = cpuSeconds(process.pid) - cpu0.me;
    console.log(`  gateway:    ${gwSeconds.toFixed(1)} s, ${(total / MB / gwSeconds).toFixed(0)} MB/s (answer ${res.body})`);
    // On a machine with few cores the gateway's ingest competes with its client for them; the floor has neither.
    console.log(
      `    CPU: gateway ${gwCpu.toFixed(1)} s, client (this process) ${clientCpu.toFixed(1)} s, of ${os.cpus().length} cores × ${gwSeconds.toFixed(1)} s`,
    );

    // ---- in-process baseline: the same batches, the same chunking (one version per ~chunk)
    const local = await lancedb.connect(localUri, localOptions ? { storageOptions: localOptions } : {});
    const perChunk = Math.max(1, Math.floor(CHUNK_BYTES / bodies[0].length));
    await waitForQuiet();
    const t1 = performance.now();
    let table: lancedb.Table | undefined;
    for (let i = 0; i < count; i += perChunk) {
      const list = Array.from({ length: Math.min(perChunk, count - i) }, (_, j) => pool[(i + j) % POOL]);
      const chunk = new arrow.Table(list);
      if (!table) table = await local.createTable('ingest', chunk);
      else await table.add(chunk);
    }
    const localSeconds = (performance.now() - t1) / 1000;
    console.log(`  in-process: ${localSeconds.toFixed(1)} s, ${(total / MB / localSeconds).toFixed(0)} MB/s`);
    console.log(`  throughput ratio gateway / in-process: ${(localSeconds / gwSeconds).toFixed(2)}`);

    // ---- the engine's own write of the same Arrow bytes (the floor): IPC files of the same chunks, handed to the
    // native handle as the gateway does (createTable, then one add per chunk); encoding happens before the clock.
    const native = (
      local as unknown as {
        inner: {
          createTable(
            n: string,
            b: Buffer,
            m: string,
            ns: string[],
            o: undefined,
          ): Promise<{ add(b: Buffer, m: string): Promise<unknown>; close(): void }>;
        };
      }
    ).inner;
    const files: Buffer[] = [];
    for (let i = 0; i < count; i += perChunk) {
      files.push(
        Buffer.from(
          arrow.tableToIPC(new arrow.Table(Array.from({ length: Math.min(perChunk, count - i) }, (_, j) => pool[(i + j) % POOL])), 'file'),
        ),
      );
    }
    await waitForQuiet();
    const cpu2 = cpuSeconds(process.pid);
    const t2 = performance.now();
    const nt = await native.createTable('native', files[0], 'create', [], undefined);
    for (const f of files.slice(1)) await nt.add(f, 'append');
    nt.close();
    const nativeSeconds = (performance.now() - t2) / 1000;
    const nativeCpu = cpuSeconds(process.pid) - cpu2;
    files.length = 0;
    console.log(
      `  engine native write: ${nativeSeconds.toFixed(1)} s, ${(total / MB / nativeSeconds).toFixed(0)} MB/s (CPU ${nativeCpu.toFixed(1)} s)`,
    );
    console.log(`  throughput ratio gateway / engine native write (the floor): ${(nativeSeconds / gwSeconds).toFixed(2)}`);
    const check = await lancedb.connect(`db://bench`, { apiKey: api_key, hostOverride: base });
    const remoteRows = await (await check.openTable('ingest')).countRows();
    if (remoteRows !== rows) throw new Error(`gateway table has ${remoteRows} rows, expected ${rows}`);
    // Memory given back: the table dropped, a few seconds idle (the allocator returns freed memory within about one).
    await check.dropTable('ingest');
    await new Promise((r) => setTimeout(r, 3000));
    const rssAfter3s = rssMiB(gw.pid!);
    // Compared with idle after the same quiet spell as idle itself.
    if (process.env.BENCH_WARMUP !== '0') await new Promise((r) => setTimeout(r, SCHEMA_WORKER_IDLE_MS));
    const rssAfter = rssMiB(gw.pid!);
    // The same upload again, REPEATS times, each dropped after: the peak of each (VmHWM reset before it, through
    // /proc/<pid>/clear_refs) and the highest of all.
    const peaks = [gwPeak];
    for (let i = 0; i < REPEATS; i++) {
      fs.writeFileSync(`/proc/${gw.pid}/clear_refs`, '5');
      const again = await upload(`${base}/v1/tables/again${i}`, headers, head, bodies, count);
      if (again.status !== 201) throw new Error(`repeated upload failed: ${again.status} ${again.body}`);
      peaks.push(peakRssMiB(gw.pid!));
      await check.dropTable(`again${i}`);
      await new Promise((r) => setTimeout(r, 3000));
    }
    const maxPeak = Math.max(...peaks);
    const where = STORAGE === 's3' ? ' (local S3 server)' : '';
    record({
      what: `ingest ${(total / MB).toFixed(0)} MB${where}`,
      gateway: `${(total / MB / gwSeconds).toFixed(0)} MB/s`,
      floor: `${(total / MB / nativeSeconds).toFixed(0)} MB/s (engine's native write; in-process ${(total / MB / localSeconds).toFixed(0)} MB/s)`,
      ratio: (nativeSeconds / gwSeconds).toFixed(2),
      target: '≥ 0.7',
      ok: nativeSeconds / gwSeconds >= 0.7,
    });
    record({
      what: `ingest memory${where}`,
      gateway: `idle ${rssBefore.toFixed(0)} MiB, peak ${maxPeak.toFixed(0)} MiB over ${peaks.length} uploads (${peaks.map((p) => p.toFixed(0)).join(' / ')}), after ${rssAfter.toFixed(0)} MiB`,
      floor: '—',
      ratio: `after − idle ${(rssAfter - rssBefore).toFixed(0)} MiB`,
      target: 'idle ≤ 200, peak ≤ 384 on every upload, after ≤ idle + 64',
      ok: rssBefore <= 200 && maxPeak <= 384 && rssAfter - rssBefore <= 64,
    });
    console.log(
      `  gateway RSS: idle ${rssBefore.toFixed(0)} MiB before the upload (VmRSS${process.env.BENCH_WARMUP === '0' ? ', right after start-up' : `, after a small warm-up upload and ${(3000 + SCHEMA_WORKER_IDLE_MS) / 1000} s without uploads; ${rssWarm.toFixed(0)} MiB 3 s after it, the schema worker still up`}), peak ${gwPeak.toFixed(0)} MiB (VmHWM; highest sampled during the upload ${sampled.toFixed(0)} MiB), ` +
        `${rssAfter.toFixed(0)} MiB ${process.env.BENCH_WARMUP === '0' ? 3 : (3000 + SCHEMA_WORKER_IDLE_MS) / 1000} s after the table was dropped (${rssAfter - rssBefore >= 0 ? '+' : ''}${(rssAfter - rssBefore).toFixed(0)} MiB; ${rssAfter3s.toFixed(0)} MiB after 3 s)`,
    );
    console.log(
      `  gateway peak RSS of each of ${peaks.length} uploads of ${(total / MB).toFixed(0)} MB (each dropped after): ${peaks.map((p) => p.toFixed(0)).join(' / ')} MiB`,
    );
    table?.close();

    // ---- vector query latency, brute force, on a smaller table
    const qCount = Math.ceil(QUERY_ROWS / BATCH_ROWS);
    const qres = await upload(`${base}/v1/tables/queries`, headers, head, bodies, qCount);
    if (qres.status !== 201) throw new Error(`upload failed: ${qres.status} ${qres.body}`);
    const localQ = await local.createTable('queries', new arrow.Table(Array.from({ length: qCount }, (_, j) => pool[j % POOL])));
    const remoteQ = await check.openTable('queries');
    const probes = Array.from({ length: QUERIES }, (_, i) =>
      Array.from(
        makeBatch(0, 1, 1000 + i)
          .getChild('vector')!
          .get(0) as Float32Array,
      ),
    );
    // The same query in this process on the files the gateway wrote (tells the data layout from the serving path).
    const gwLocation = STORAGE === 'local' ? (JSON.parse(qres.body) as { location?: string }).location : undefined;
    const gwConn = gwLocation ? await lancedb.connect(path.dirname(gwLocation)) : undefined;
    const gwTable = gwLocation ? await gwConn!.openTable(path.basename(gwLocation).replace(/\.lance$/, '')) : undefined;
    // The targets take turns probe by probe (the order rotating), so a slow spell of this shared machine falls on
    // all of them alike instead of on whichever ran during it.
    const targets = [remoteQ, localQ, ...(gwTable ? [gwTable] : [])];
    await waitForQuiet();
    const times: number[][] = targets.map(() => []);
    for (let i = 0; i < Math.max(1, QUERY_WARMUP); i++)
      for (const tbl of targets)
        await tbl
          .vectorSearch(probes[i % probes.length])
          .limit(10)
          .toArray();
    for (let i = 0; i < probes.length; i++) {
      for (let j = 0; j < targets.length; j++) {
        const t = (i + j) % targets.length;
        const s = performance.now();
        const r = await targets[t].vectorSearch(probes[i]).limit(10).toArray();
        times[t].push(performance.now() - s);
        if (r.length !== 10) throw new Error('short answer');
      }
    }
    const [viaGw, inProc, onGwFiles] = times;
    const layout = `fragments: gateway's table ${gwTable ? (await gwTable.stats()).fragmentStats.numFragments : '?'}, in-process table ${(await localQ.stats()).fragmentStats.numFragments}`;
    gwTable?.close();
    gwConn?.close();
    console.log(`vector query (k=10, ${qCount * BATCH_ROWS} rows, no index, ${QUERIES} queries per target, the targets taking turns):`);
    console.log(`  gateway:    p50 ${pct(viaGw, 0.5).toFixed(1)} ms, p95 ${pct(viaGw, 0.95).toFixed(1)} ms`);
    console.log(`  in-process: p50 ${pct(inProc, 0.5).toFixed(1)} ms, p95 ${pct(inProc, 0.95).toFixed(1)} ms`);
    console.log(`  latency ratio gateway / in-process (p50): ${(pct(viaGw, 0.5) / pct(inProc, 0.5)).toFixed(2)}`);
    record({
      what: `vector query k=10, ${qCount * BATCH_ROWS} rows${STORAGE === 's3' ? ' (local S3 server)' : ''}`,
      gateway: `p50 ${pct(viaGw, 0.5).toFixed(1)} ms, p95 ${pct(viaGw, 0.95).toFixed(1)} ms`,
      floor: `p50 ${pct(inProc, 0.5).toFixed(1)} ms, p95 ${pct(inProc, 0.95).toFixed(1)} ms (in-process)`,
      ratio: `${(pct(viaGw, 0.5) / pct(inProc, 0.5)).toFixed(2)} × latency`,
      target: '≤ 1.15',
      ok: pct(viaGw, 0.5) / pct(inProc, 0.5) <= 1.15,
    });
    if (onGwFiles)
      console.log(
        `  in-process on the gateway's files: p50 ${pct(onGwFiles, 0.5).toFixed(1)} ms, p95 ${pct(onGwFiles, 0.95).toFixed(1)} ms (${layout})`,
      );
    check.close();
    local.close();
  } finally {
    for (const c of children) {
      c.removeAllListeners('exit');
      c.kill('SIGTERM');
    }
    await new Promise((r) => setTimeout(r, 500));
    await s3?.close();
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
