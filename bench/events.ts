/**
 * Benchmark of change events (docs/events.md): the write paths with two sinks configured (a NATS JetStream stream on
 * 127.0.0.1:4222 and a signed webhook to a receiver in a child process) against the same writes to a database with no
 * sink. One gateway child on a fresh Postgres catalog, two databases: `ev_on` (both sinks, per database) and `ev_off`
 * (none; its changes are still written to the outbox, as every change is). Two kinds of write, each measured in
 * BENCH_EVENTS_ROUNDS rounds (default 6) that alternate which database goes first:
 *  - inserts: BENCH_EVENTS_INSERTS (default 400) small inserts (100 rows) through the remote-dialect insert route,
 *    4 at a time (an engine commit, then its audit confirmation and event in one statement);
 *  - catalog writes: BENCH_EVENTS_CATALOG (default 800) namespace creations, 4 at a time (one catalog transaction,
 *    with its audit record and event).
 * The headline is, for each kind, the median throughput with sinks over the median without (target ≥ 0.9). Before each
 * phase both sinks have everything `ev_on` changed so far (so a phase never pays for an earlier one's deliveries, and
 * none is lost); the CPU each process spent in each database's phases is printed too. The webhook receiver is a child process.
 *
 *   npm run bench:events   (BENCH_PG_URL; BENCH_NATS_URL, default nats://127.0.0.1:4222)
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import { fork } from 'node:child_process';
import * as os from 'node:os';
import * as path from 'node:path';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import * as arrow from 'apache-arrow';
import { ADMIN_URL, sql, urlFor } from './pg';
import { cpuSeconds, median, startChild } from './child';
import { execFileSync } from 'node:child_process';
import { waitForQuiet } from './quiet';
import { record } from './summary';

const ROUNDS = Number(process.env.BENCH_EVENTS_ROUNDS ?? 6);
const INSERTS = Number(process.env.BENCH_EVENTS_INSERTS ?? 400);
const CATALOG = Number(process.env.BENCH_EVENTS_CATALOG ?? 800);
const CONNECTIONS = 4;
const NATS_URL = process.env.BENCH_NATS_URL ?? 'nats://127.0.0.1:4222';
const ADMIN_KEY = 'bench-operator-key-0123456789';

/** CPU seconds of every process whose command line matches `pattern` (Postgres backends, the NATS server). */
function cpuOf(pattern: string): number {
  let pids: number[];
  try {
    pids = execFileSync('pgrep', ['-f', pattern], { encoding: 'utf8' }).trim().split('\n').filter(Boolean).map(Number);
  } catch {
    return 0; // none
  }
  return pids.reduce((a, p) => a + (cpuSeconds(p) || 0), 0);
}

const body = Buffer.from(
  arrow.tableToIPC(
    new arrow.Table({
      id: arrow.vectorFromArray(
        Array.from({ length: 100 }, (_, i) => i),
        new arrow.Float64(),
      ),
    }),
    'stream',
  ),
);

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lgw-bench-events-'));
  const port = 20000 + Math.floor(Math.random() * 20000);
  const pgName = `lgw_bench_events_${process.pid}`;
  await sql(ADMIN_URL, `CREATE DATABASE "${pgName}"`);
  // The sinks: a JetStream stream of this run's own, and a webhook receiver that counts what it is sent.
  const prefix = `lgwbench${randomBytes(3).toString('hex')}`;
  const nc = await connect({ servers: NATS_URL });
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: prefix.toUpperCase(), subjects: [`${prefix}.>`] });
  // The webhook receiver runs in a process of its own: in this one it would slow the benchmark's client.
  const receiver = fork(path.join(__dirname, 'webhook-receiver.js'));
  const { port: hookPort } = await new Promise<{ port: number }>((r) => receiver.once('message', (m) => r(m as { port: number })));
  const hookUrl = `http://127.0.0.1:${hookPort}/events`;
  const webhookCount = () =>
    new Promise<number>((r) => {
      receiver.once('message', (m) => r((m as { count: number }).count));
      receiver.send('count');
    });
  const gw = await startChild(
    path.join(__dirname, 'gateway-child.js'),
    {
      PORT: String(port),
      DATA_DIR: path.join(dir, 'gateway'),
      BOOTSTRAP_DATABASE: '',
      ADMIN_API_KEY: ADMIN_KEY,
      LOG_LEVEL: 'error',
      RATE_LIMIT_LIMIT: '1000000',
      DATABASE_URL: urlFor(pgName),
      MAINTENANCE_ENABLED: 'false',
      EVENTS_ALLOW_PRIVATE_TARGETS: 'true',
    },
    { gateway: true },
  );
  try {
    const base = `http://127.0.0.1:${port}`;
    const call = async (method: string, p: string, headers: Record<string, string>, payload?: string | Buffer) => {
      const r = await fetch(base + p, { method, headers, body: payload });
      const text = await r.text();
      if (r.status >= 300) throw new Error(`${method} ${p}: ${r.status} ${text}`);
      return text ? JSON.parse(text) : undefined;
    };
    const op = (method: string, p: string, b?: unknown) =>
      call(method, p, { 'x-api-key': ADMIN_KEY, 'content-type': 'application/json' }, b === undefined ? undefined : JSON.stringify(b));
    const headers: Record<string, Record<string, string>> = {};
    for (const name of ['ev_on', 'ev_off']) {
      await op('POST', '/admin/v1/databases', { name });
      const key = (await op('POST', `/admin/v1/databases/${name}/api-keys`, { role: 'write' })).api_key;
      headers[name] = { 'x-api-key': key, 'x-service-database': name };
    }
    await op('POST', '/admin/v1/databases/ev_on/event-sinks', { name: 'bus', kind: 'nats', url: NATS_URL, subject_prefix: prefix });
    await op('POST', '/admin/v1/databases/ev_on/event-sinks', { name: 'hook', kind: 'webhook', url: hookUrl });

    let tables = 0;
    let namespaces = 0;
    /** The changes made in ev_on so far: each is one event on each sink. */
    let onChanges = 0;
    const sinksOf = async () =>
      (await op('GET', '/admin/v1/databases/ev_on/event-sinks')).sinks as Array<{ name: string; delivered: number }>;
    const caughtUp = async (): Promise<void> => {
      const deadline = Date.now() + 120_000;
      for (;;) {
        const sinks = await sinksOf();
        if (sinks.every((s) => s.delivered >= onChanges) && (await webhookCount()) >= onChanges) return;
        if (Date.now() > deadline) throw new Error(`sinks behind: ${JSON.stringify(sinks)} of ${onChanges} changes`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    const inserts = async (db: string): Promise<number> => {
      const table = `t${tables++}`;
      const h = { ...headers[db], 'content-type': 'application/vnd.apache.arrow.stream' };
      await call('POST', `/v1/table/${table}/create/`, h, body);
      if (db === 'ev_on') onChanges += 1;
      await caughtUp();
      let next = 0;
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: CONNECTIONS }, async () => {
          while (next++ < INSERTS) await call('POST', `/v1/table/${table}/insert/`, h, body);
        }),
      );
      if (db === 'ev_on') onChanges += INSERTS;
      return INSERTS / ((performance.now() - t0) / 1000);
    };
    const catalogWrites = async (db: string): Promise<number> => {
      const h = { ...headers[db], 'content-type': 'application/json' };
      await caughtUp();
      let next = 0;
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: CONNECTIONS }, async () => {
          while (next++ < CATALOG) await call('POST', `/v1/namespace/ns${namespaces++}/create`, h, '{}');
        }),
      );
      if (db === 'ev_on') onChanges += CATALOG;
      return CATALOG / ((performance.now() - t0) / 1000);
    };
    // Warm-up, then the timed rounds (alternating which database goes first).
    await inserts('ev_off');
    await inserts('ev_on');
    await catalogWrites('ev_off');
    await catalogWrites('ev_on');
    // CPU by process per database's phases: the gateway, the catalog (Postgres), the NATS server, this process (the
    // client). The sinks' own share would run elsewhere in production.
    const cpu = {
      ev_on: { gateway: 0, postgres: 0, nats: 0, bench: 0 },
      ev_off: { gateway: 0, postgres: 0, nats: 0, bench: 0 },
    };
    const sample = () => ({
      gateway: cpuSeconds(gw.pid),
      postgres: cpuOf('postgres'),
      nats: cpuOf('nats-server'),
      bench: cpuSeconds(process.pid),
    });
    const measured = async (db: 'ev_on' | 'ev_off', fn: () => Promise<number>): Promise<number> => {
      const a = sample();
      const r = await fn();
      const b = sample();
      for (const k of Object.keys(a) as Array<keyof typeof a>) cpu[db][k] += b[k] - a[k];
      return r;
    };
    const figures = {
      inserts: { ev_on: [] as number[], ev_off: [] as number[] },
      catalog: { ev_on: [] as number[], ev_off: [] as number[] },
    };
    for (let r = 0; r < ROUNDS; r++) {
      await waitForQuiet({ seconds: 1, maxSeconds: 20 });
      const order = r % 2 === 0 ? ['ev_off', 'ev_on'] : ['ev_on', 'ev_off'];
      for (const db of order as Array<'ev_on' | 'ev_off'>) figures.inserts[db].push(await measured(db, () => inserts(db)));
      for (const db of order as Array<'ev_on' | 'ev_off'>) figures.catalog[db].push(await measured(db, () => catalogWrites(db)));
    }
    // Every event of ev_on reached both sinks.
    await caughtUp();
    const received = await webhookCount();
    const streamed = (await jsm.streams.info(prefix.toUpperCase())).state.messages;
    console.log(
      `events bench: ${ROUNDS} rounds; inserts ${INSERTS} × 100 rows and catalog writes ${CATALOG} namespaces, ${CONNECTIONS} at a time; ev_on has a JetStream and a webhook sink`,
    );
    for (const kind of ['inserts', 'catalog'] as const) {
      const on = median(figures[kind].ev_on);
      const off = median(figures[kind].ev_off);
      const ratio = on / off;
      const label = kind === 'inserts' ? 'inserts' : 'catalog writes';
      console.log(`  ${label} without sinks: ${figures[kind].ev_off.map((x) => x.toFixed(0)).join(' / ')} /s (median ${off.toFixed(0)})`);
      console.log(`  ${label} with two sinks: ${figures[kind].ev_on.map((x) => x.toFixed(0)).join(' / ')} /s (median ${on.toFixed(0)})`);
      console.log(`  ratio with / without: ${ratio.toFixed(2)} (target ≥ 0.9)`);
      record({
        what: `events: ${label} with two sinks (JetStream + webhook)`,
        gateway: `${on.toFixed(0)} /s`,
        floor: `${off.toFixed(0)} /s without sinks`,
        ratio: ratio.toFixed(2),
        target: '≥ 0.9',
        ok: ratio >= 0.9 && received === onChanges && streamed === onChanges,
      });
    }
    const fmt = (c: (typeof cpu)['ev_on']) =>
      Object.entries(c)
        .map(([k, v]) => `${k} ${v.toFixed(1)} s`)
        .join(', ');
    console.log(`  CPU during the phases without sinks: ${fmt(cpu.ev_off)}`);
    console.log(`  CPU during the phases with sinks:    ${fmt(cpu.ev_on)}`);
    console.log(`  delivered: ${onChanges} changes; webhook ${received} distinct events, JetStream ${streamed} messages`);
    const perEvent = (cpu.ev_on.gateway - cpu.ev_off.gateway) / Math.max(1, onChanges);
    console.log(`  gateway CPU per change for its two deliveries (with minus without): ${(perEvent * 1000).toFixed(2)} ms`);
    if (received !== onChanges || streamed !== onChanges) {
      throw new Error(`events lost or doubled: ${onChanges} changes, webhook ${received}, JetStream ${streamed}`);
    }
  } finally {
    gw.removeAllListeners('exit');
    gw.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    receiver.kill();
    await jsm.streams.delete(prefix.toUpperCase()).catch(() => undefined);
    await nc.close();
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
