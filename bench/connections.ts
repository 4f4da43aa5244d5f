/**
 * Catalog connections per replica (docs/pooler.md): the server sessions Postgres holds for the catalog database
 * (pg_stat_activity), with one and with two replicas, straight to Postgres and through PgBouncer in transaction mode
 * (DATABASE_DIRECT_URL for migrations), while they start, at idle, at the peak of a load on both and once their pools
 * have let idle connections go (30 s).
 *
 *   npm run bench:connections   (BENCH_SECONDS of load, default 5; BENCH_CONNECTIONS per replica, default 64;
 *                                BENCH_POOLER_POOL_SIZE, PgBouncer's default_pool_size, default 20 as in docs/pooler.md;
 *                                BENCH_GW_ENV="DB_POOL_MAX=…" for the gateways; BENCH_PG_URL as bench:list)
 */
import { ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import { Client } from 'pg';
import { startPgBouncer } from '../test/helpers/pgbouncer';
import { freePort } from '../test/helpers/redis';
import { startChild } from './child';
import { ADMIN_URL, sql, urlFor } from './pg';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64);
const POOLER_POOL_SIZE = Number(process.env.BENCH_POOLER_POOL_SIZE ?? 20);
const ADMIN_KEY = 'bench-operator-key-0123456789';
const IDLE_AFTER_MS = 35_000; // the pool's idleTimeoutMillis (30 s), and a little

interface Figures {
  case: string;
  startPeak: number;
  idle: number;
  loadPeak: number;
  afterLoad: number;
  idleLater: number;
  rps: number;
  non2xx: number;
  pooler?: string;
}

/** Samples the number of server sessions on `db` every 50 ms; `peak()` since the last `reset()`. */
async function sampler(db: string) {
  const c = new Client({ connectionString: ADMIN_URL });
  await c.connect();
  let max = 0;
  let stopped = false;
  const count = async () =>
    (await c.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1', [db])).rows[0].n;
  const loop = (async () => {
    while (!stopped) {
      max = Math.max(max, await count());
      await sleep(50);
    }
  })();
  return {
    count,
    peak: () => max,
    reset: () => void (max = 0),
    async stop() {
      stopped = true;
      await loop;
      await c.end();
    },
  };
}

async function measure(mode: 'direct' | 'pgbouncer', replicas: number): Promise<Figures> {
  const db = `lgw_bench_conn_${randomBytes(4).toString('hex')}`;
  await sql(ADMIN_URL, `CREATE DATABASE "${db}"`);
  const direct = urlFor(db);
  const bouncer = mode === 'pgbouncer' ? await startPgBouncer({ upstream: ADMIN_URL, poolSize: POOLER_POOL_SIZE }) : undefined;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'lgw-bench-conn-'));
  const s = await sampler(db);
  const children: ChildProcess[] = [];
  try {
    const env = {
      ADMIN_API_KEY: ADMIN_KEY,
      DATA_DIR: dataDir,
      STORAGE_ROOT: path.join(dataDir, 'tables'),
      RATE_LIMIT_LIMIT: '100000000',
      LOG_LEVEL: 'error',
      ...(bouncer ? { DATABASE_URL: bouncer.pooled(direct), DATABASE_DIRECT_URL: direct } : { DATABASE_URL: direct }),
    };
    const ports = await Promise.all(Array.from({ length: replicas }, () => freePort()));
    children.push(
      ...(await Promise.all(
        ports.map((port) => startChild(path.join(__dirname, 'gateway-child.js'), { ...env, PORT: String(port) }, { gateway: true })),
      )),
    );
    const startPeak = s.peak();
    await sleep(2000);
    const idle = await s.count();

    // A tenant with a few namespaces; the load lists them on every replica at once.
    const base = `http://127.0.0.1:${ports[0]}`;
    const op = { 'x-api-key': ADMIN_KEY, 'content-type': 'application/json' };
    const name = 'conn';
    await fetch(`${base}/admin/v1/databases`, { method: 'POST', headers: op, body: JSON.stringify({ name }) });
    const key = (
      (await (
        await fetch(`${base}/admin/v1/databases/${name}/api-keys`, { method: 'POST', headers: op, body: '{"role":"write"}' })
      ).json()) as { api_key: string }
    ).api_key;
    const headers = { 'x-api-key': key, 'x-service-database': name, 'content-type': 'application/json' };
    for (let i = 0; i < 5; i++) await fetch(`${base}/v1/namespace/ns${i}/create`, { method: 'POST', headers, body: '{}' });
    s.reset();
    const results = await Promise.all(
      ports.map((port) =>
        autocannon({ url: `http://127.0.0.1:${port}/v1/namespace/%24/list`, connections: CONNECTIONS, duration: SECONDS, headers }),
      ),
    );
    const loadPeak = s.peak();
    const afterLoad = await s.count();
    let pooler: string | undefined;
    if (bouncer) {
      const pool = (await bouncer.show<Record<string, string>>('pools')).find((p) => p.database === db);
      pooler = pool
        ? `clients ${Number(pool.cl_active) + Number(pool.cl_waiting)}, servers ${Number(pool.sv_active) + Number(pool.sv_idle) + Number(pool.sv_used)}`
        : '';
    }
    await sleep(IDLE_AFTER_MS);
    const idleLater = await s.count();
    return {
      case: `${mode}, ${replicas} replica${replicas > 1 ? 's' : ''}`,
      startPeak,
      idle,
      loadPeak,
      afterLoad,
      idleLater,
      rps: Math.round(results.reduce((n, r) => n + r.requests.average, 0)),
      non2xx: results.reduce((n, r) => n + r.non2xx + r.errors, 0),
      pooler,
    };
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.once('exit', r)))));
    await s.stop();
    await bouncer?.stop();
    await sql(ADMIN_URL, `DROP DATABASE IF EXISTS "${db}" WITH (FORCE)`);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

void (async () => {
  console.log(
    `catalog server sessions (pg_stat_activity) · load: GET list namespaces, ${CONNECTIONS} connections per replica for ${SECONDS} s · ` +
      `PgBouncer default_pool_size ${POOLER_POOL_SIZE} · gateway env: ${process.env.BENCH_GW_ENV ?? 'defaults (DB_POOL_MAX 10)'}`,
  );
  const rows: Figures[] = [];
  for (const mode of ['direct', 'pgbouncer'] as const) for (const replicas of [1, 2]) rows.push(await measure(mode, replicas));
  console.log(
    '\n| case | starting (peak) | idle | under load (peak) | right after | 35 s later | req/s | errors | PgBouncer pool after load |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    console.log(
      `| ${r.case} | ${r.startPeak} | ${r.idle} | ${r.loadPeak} | ${r.afterLoad} | ${r.idleLater} | ${r.rps} | ${r.non2xx} | ${r.pooler ?? '–'} |`,
    );
  }
})().catch((err) => {
  console.error(err);
  process.exit(1);
});
