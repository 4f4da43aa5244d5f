/**
 * Benchmark of the storage refresher (docs/usage-and-quotas.md, "A first pass over many tables"): how fast one
 * replica measures a pass over N small tables, at several USAGE_REFRESH_CONCURRENCY values, on local disk and on an
 * S3-compatible store (s3rver in a process of its own, bench/s3-server.ts, each request delayed by a simulated
 * round trip). One gateway in this process on a fresh Postgres catalog; the tables (BENCH_VERSIONS versions of a few
 * rows each) are written through it first; then, for each case, every table is made never-measured again and one
 * refresher round with an unbounded budget measures them all. Reported per case: tables a second, wall time per
 * table per measurement slot (concurrency), the gateway process's CPU per table (listing, manifest read, statistics,
 * the catalog's claim and record), and the object-store requests per table.
 *
 *   npm run build && node dist/bench/usage-refresh.js
 *     (BENCH_TABLES, default 1000; BENCH_VERSIONS, default 1; BENCH_STORAGE, default local,s3;
 *      BENCH_S3_LATENCY_MS, default 0,20 (a pass each); BENCH_CONCURRENCY, default 1,4,16;
 *      TEST_PG_URL, default postgresql://postgres@127.0.0.1:5432/postgres)
 */
import { ChildProcess, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import * as lancedb from '@lancedb/lancedb';
import * as arrow from 'apache-arrow';
import { PrismaClient } from '../src/generated/prisma/client';
import { UsageRefresher } from '../src/modules/usage/usage-refresher.service';
import { APP_CONFIG, AppConfig } from '../src/platform/config/config';
import { TableStorage } from '../src/engine/storage/table-storage.service';
import { newTenant, startGateway, Tenant, TestGateway } from '../test/helpers/gateway';
import { s3Options, TEST_BUCKET } from '../test/helpers/s3';

const list = (v: string | undefined, def: string) => (v ?? def).split(',').filter(Boolean);
const TABLES = Number(process.env.BENCH_TABLES ?? 1000);
const VERSIONS = Number(process.env.BENCH_VERSIONS ?? 1);
const STORAGES = list(process.env.BENCH_STORAGE, 'local,s3');
const LATENCIES = list(process.env.BENCH_S3_LATENCY_MS, '0,20').map(Number);
const CONCURRENCY = list(process.env.BENCH_CONCURRENCY, '1,4,16').map(Number);
/** Tables written at once while setting up. */
const SETUP_PARALLEL = 8;

const ipc = (from: number, n: number): Buffer =>
  Buffer.from(
    arrow.tableToIPC(
      lancedb.makeArrowTable(
        Array.from({ length: n }, (_, i) => ({ id: from + i, label: `row-${from + i}`, vector: [from + i, 1, 2, 3, 4, 5, 6, 7] })),
      ),
      'stream',
    ),
  );

async function post(gw: TestGateway, t: Tenant, p: string, body: Buffer, status: number): Promise<void> {
  const r = await fetch(gw.url + p, {
    method: 'POST',
    headers: { 'x-api-key': t.writeKey, 'x-service-database': t.name, 'content-type': 'application/vnd.apache.arrow.stream' },
    body,
  });
  const text = await r.text();
  if (r.status !== status) throw new Error(`${p}: ${r.status} ${text.slice(0, 300)}`);
}

async function startS3(): Promise<{ child: ChildProcess; endpoint: string }> {
  const child = fork(path.join(__dirname, 's3-server.js'), [], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const { port } = await new Promise<{ port: number }>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`s3-server exited with ${code}`)));
    child.once('message', (m) => resolve(m as { port: number }));
  });
  return { child, endpoint: `http://127.0.0.1:${port}` };
}

const fmt = (n: number, digits = 1) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

async function main(): Promise<void> {
  console.log(`storage refresher: a pass over ${TABLES} tables of ${VERSIONS} version(s), Node ${process.version}`);
  console.log('| store | latency/request | concurrency | tables/s | ms per table per slot | CPU ms per table | store requests per table |');
  console.log('|---|---|---|---|---|---|---|');
  for (const storage of STORAGES) {
    const s3 = storage === 's3' ? await startS3() : undefined;
    const env: Record<string, string> = {
      USAGE_FLUSH_INTERVAL_SECONDS: '3600',
      USAGE_REFRESH_INTERVAL_SECONDS: '0',
      USAGE_REFRESH_TABLES_PER_MINUTE: String(1e9),
      MAINTENANCE_ENABLED: 'false',
      JOBS_POLL_INTERVAL_MS: '0',
      RECLAIM_INTERVAL_SECONDS: '0',
      EVENTS_DISPATCH_INTERVAL_MS: '0',
      ...(s3
        ? {
            STORAGE_ROOT: `s3://${TEST_BUCKET}/bench-${randomBytes(4).toString('hex')}`,
            STORAGE_OPTIONS: JSON.stringify(s3Options(s3.endpoint)),
            STORAGE_CLIENT_OPTIONS: JSON.stringify(s3Options(s3.endpoint)),
          }
        : {}),
    };
    const gw = await startGateway('postgres', env);
    try {
      const tenant = await newTenant(gw);
      if (s3) await fetch(`${s3.endpoint}/__latency/0`, { method: 'PUT' });
      const started = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: SETUP_PARALLEL }, async () => {
          while (next < TABLES) {
            const i = next++;
            await post(gw, tenant, `/v1/tables/t${i}`, ipc(0, 20), 201);
            for (let v = 1; v < VERSIONS; v++) await post(gw, tenant, `/v1/table/t${i}/insert`, ipc(v * 20, 5), 200);
          }
        }),
      );
      console.error(`(${storage}: ${TABLES} tables written in ${fmt((performance.now() - started) / 1000)} s)`);
      const refresher = gw.app.get(UsageRefresher);
      const config = gw.app.get<AppConfig>(APP_CONFIG);
      const prisma = gw.app.get(PrismaClient);
      // The listing alone (one table at a time), the rest of a measurement being the engine's open and statistics.
      {
        const locations = (await prisma.$queryRawUnsafe<{ location: string }[]>(`SELECT location FROM tables`)).map((r) => r.location);
        const storage = gw.app.get(TableStorage);
        const cpu = process.cpuUsage();
        const t0 = performance.now();
        for (const l of locations) await storage.listFiles(l);
        const ms = performance.now() - t0;
        const used = process.cpuUsage(cpu);
        console.error(
          `(listing only, no added latency: ${fmt(ms / locations.length, 2)} ms and ${fmt(
            (used.user + used.system) / 1000 / locations.length,
            2,
          )} ms CPU per table)`,
        );
      }
      for (const latency of s3 ? LATENCIES : [0]) {
        if (s3) await fetch(`${s3.endpoint}/__latency/${latency}`, { method: 'PUT' });
        for (const concurrency of CONCURRENCY) {
          await prisma.$executeRawUnsafe(
            `UPDATE table_usage SET scanned_at = NULL, marked = NULL, marked_at = NULL, lease_owner = NULL, lease_until = NULL`,
          );
          config.usage.refreshConcurrency = concurrency;
          if (s3) await fetch(`${s3.endpoint}/__requests`, { method: 'DELETE' });
          const cpu = process.cpuUsage();
          const t0 = performance.now();
          const round = await refresher.runOnce();
          const ms = performance.now() - t0;
          const used = process.cpuUsage(cpu);
          if (round.scanned !== TABLES || round.failed !== 0) throw new Error(`a pass measured ${JSON.stringify(round)}`);
          const requests = s3 ? Object.values((await (await fetch(`${s3.endpoint}/__requests`)).json()) as Record<string, number>) : [];
          console.log(
            `| ${storage} | ${s3 ? `${latency} ms` : '—'} | ${concurrency} | ${fmt((TABLES * 1000) / ms, 0)} | ${fmt((ms * concurrency) / TABLES)} | ${fmt(
              (used.user + used.system) / 1000 / TABLES,
              2,
            )} | ${s3 ? fmt(requests.reduce((a, b) => a + b, 0) / TABLES) : '—'} |`,
          );
        }
      }
    } finally {
      await gw.close();
      s3?.child.disconnect();
    }
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
