/**
 * Fault drill: load against a gateway (child process, real Postgres, a private Redis) while Redis is killed and
 * restarted and the gateway's Postgres connections are terminated, again and again. Every write creates a
 * namespace with a unique name, so afterwards the catalog can be checked against what the clients were told:
 *   lost     = acknowledged (200) but missing   → must be 0
 *   phantom  = not acknowledged but present     → reported (a commit whose answer was lost in a connection kill)
 *   500s     → must be 0
 *
 *   npm run fault   (FAULT_SECONDS, default 20; FAULT_WORKERS, default 8; BENCH_PG_URL as for the benchmark)
 */
import { ChildProcess, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PrivateRedis } from '../test/helpers/redis';
import { ADMIN_URL, sql, urlFor } from './pg';

const SECONDS = Number(process.env.FAULT_SECONDS ?? 20);
const WORKERS = Number(process.env.FAULT_WORKERS ?? 8);

async function main(): Promise<void> {
  const dbName = `lgw_fault_${randomBytes(4).toString('hex')}`;
  await sql(ADMIN_URL, `CREATE DATABASE "${dbName}"`);
  const url = urlFor(dbName);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'lgw-fault-'));
  const redis = await PrivateRedis.create();
  let gateway: ChildProcess | undefined;
  try {
    const port = 26000 + Math.floor(Math.random() * 1000);
    const adminKey = randomBytes(24).toString('hex');
    gateway = fork(path.join(__dirname, 'gateway-child.js'), [], {
      env: {
        ...process.env,
        DATABASE_URL: url,
        REDIS_URL: redis.url,
        PORT: String(port),
        DATA_DIR: dataDir,
        ADMIN_API_KEY: adminKey,
        LOG_LEVEL: 'error',
        DB_CONNECT_TIMEOUT_MS: '2000',
        RATE_LIMIT_LIMIT: '100000',
      },
      stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
    });
    await new Promise((r) => gateway!.once('message', r));
    const base = `http://127.0.0.1:${port}`;
    const op = { 'x-api-key': adminKey, 'content-type': 'application/json' };
    await fetch(`${base}/admin/v1/databases`, { method: 'POST', headers: op, body: '{"name":"fault"}' });
    const key = (
      (await (
        await fetch(`${base}/admin/v1/databases/fault/api-keys`, { method: 'POST', headers: op, body: '{"role":"write"}' })
      ).json()) as { api_key: string }
    ).api_key;
    const headers = { 'x-api-key': key, 'x-service-database': 'fault', 'content-type': 'application/json' };

    const byStatus = new Map<string, number>();
    const acknowledged = new Set<string>();
    const attempted = new Set<string>();
    let sent = 0;
    let faults = 0;
    const deadline = Date.now() + SECONDS * 1000;

    const worker = async (w: number) => {
      for (let i = 0; Date.now() < deadline; i++) {
        const write = i % 2 === 0;
        const name = `w${w}_${i}`;
        sent++;
        let status: string;
        try {
          const res = write
            ? await fetch(`${base}/v1/namespace/${name}/create`, {
                method: 'POST',
                headers,
                body: '{}',
                signal: AbortSignal.timeout(15_000),
              })
            : await fetch(`${base}/v1/namespace/%24/list?limit=5`, { headers, signal: AbortSignal.timeout(15_000) });
          status = String(res.status);
          await res.arrayBuffer();
          if (write) {
            attempted.add(name);
            if (res.status === 200) acknowledged.add(name);
          }
        } catch (err) {
          status = `transport error (${(err as Error).name})`;
          if (write) attempted.add(name);
        }
        byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
      }
    };

    const chaos = async () => {
      while (Date.now() < deadline - 2000) {
        await new Promise((r) => setTimeout(r, 1500));
        await redis.stop();
        faults++;
        await sql(ADMIN_URL, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, [
          dbName,
        ]);
        faults++;
        await new Promise((r) => setTimeout(r, 1000));
        await redis.start();
      }
    };

    await Promise.all([...Array.from({ length: WORKERS }, (_, w) => worker(w)), chaos()]);

    const present = new Set((await sql<{ name: string }>(url, `SELECT name FROM namespaces WHERE parent_path = ''`)).map((r) => r.name));
    const lost = [...acknowledged].filter((n) => !present.has(n));
    const phantom = [...attempted].filter((n) => !acknowledged.has(n) && present.has(n));
    const errors500 = [...byStatus.entries()].filter(([s]) => s.startsWith('5') && s !== '503').reduce((a, [, n]) => a + n, 0);

    console.log(
      `\nfault drill: ${SECONDS} s, ${WORKERS} workers, ${faults} faults injected (Redis killed/restarted, Postgres backends terminated)`,
    );
    console.log(`requests sent: ${sent}`);
    for (const [s, n] of [...byStatus.entries()].sort()) console.log(`  ${s.padEnd(28)} ${n}`);
    console.log(`500-class answers (other than 503): ${errors500}`);
    console.log(
      `writes acknowledged: ${acknowledged.size}; lost (acknowledged, missing): ${lost.length}; phantom (unacknowledged, present): ${phantom.length}`,
    );
    if (errors500 > 0 || lost.length > 0) process.exitCode = 1;
  } finally {
    gateway?.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    await redis.stop();
    await sql(ADMIN_URL, `DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
