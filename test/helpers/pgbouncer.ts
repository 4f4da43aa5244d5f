import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from 'pg';
import { freePort } from './redis';

/**
 * PgBouncer (Debian's package: `apt-get install pgbouncer`, which .ci/run does; PGBOUNCER_BIN to use another binary)
 * in transaction mode in front of the tests' Postgres, for the catalog behind a pooler (docs/pooler.md).
 *
 * TEST_POOLER=pgbouncer (the pooler pass of scripts/run-tests.js) puts one in front of every Postgres catalog that
 * startGateway opens in this test process: DATABASE_URL goes through it, DATABASE_DIRECT_URL is Postgres itself.
 */
export const PGBOUNCER = [process.env.PGBOUNCER_BIN, '/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find((p) => p && fs.existsSync(p));
export const NO_PGBOUNCER = 'no pgbouncer binary found (apt-get install pgbouncer, or set PGBOUNCER_BIN)';

/** Set (to 'pgbouncer') on the pooler pass: the suites' Postgres catalogs are reached through PgBouncer. */
export const TEST_POOLER = process.env.TEST_POOLER === 'pgbouncer' ? 'pgbouncer' : undefined;

/** Server connections per database and user on the pooler pass: fewer than DB_POOL_MAX, so connections are shared. */
const PASS_POOL_SIZE = 5;

export interface PgBouncer {
  port: number;
  /** `directUrl` (a database on the upstream Postgres) as reached through this PgBouncer: same user and database. */
  pooled(directUrl: string): string;
  /** True when `url` names the upstream Postgres (so that pooled() applies to it). */
  isUpstream(url: string): boolean;
  /** `SHOW <what>` on PgBouncer's admin console (pools, servers, clients, stats…). */
  show<T = Record<string, unknown>>(what: string): Promise<T[]>;
  /** What PgBouncer has logged so far. */
  log(): string;
  stop(): Promise<void>;
}

export interface PgBouncerOptions {
  /** The Postgres it forwards every database to (default: TEST_PG_URL's host and port). */
  upstream?: string;
  /** default_pool_size: server connections per database and user. */
  poolSize?: number;
  /**
   * A configuration of one's own (e.g. the shipped deploy/pgbouncer/pgbouncer.ini) instead of the tests' trusting
   * forward-everything one: its [databases] and settings are kept, except where it listens, where its userlist is,
   * and who may use the admin console (`user`, with `password` for show()).
   */
  config?: { ini: string; userlist: string; user: string; password: string };
}

/** `ini` with each `key = …` setting of `settings` replaced, or added to [pgbouncer] when absent. */
function withSettings(ini: string, settings: Record<string, string>): string {
  let out = ini;
  for (const [key, value] of Object.entries(settings)) {
    const line = new RegExp(`^${key}\\s*=.*$`, 'm');
    out = line.test(out) ? out.replace(line, `${key} = ${value}`) : out.replace(/^\[pgbouncer\]$/m, `[pgbouncer]\n${key} = ${value}`);
  }
  return out;
}

/**
 * Starts a PgBouncer on a free loopback port: in transaction mode, forwarding any database name (`*`) upstream, or
 * with `config`, as that configuration says.
 */
export async function startPgBouncer(opts: PgBouncerOptions = {}): Promise<PgBouncer> {
  if (!PGBOUNCER) throw new Error(NO_PGBOUNCER);
  const upstream = new URL(opts.upstream ?? process.env.TEST_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres');
  const user = decodeURIComponent(upstream.username || 'postgres');
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lgw-pgbouncer-'));
  // Run as root (CI), PgBouncer must be told a user to become: postgres, who must be able to read its files.
  const asRoot = process.getuid?.() === 0;
  fs.chmodSync(dir, 0o755);
  const userlist = path.join(dir, 'userlist.txt');
  fs.writeFileSync(userlist, opts.config?.userlist ?? `"${user}" ""\n`, { mode: 0o644 });
  const ini = opts.config
    ? withSettings(opts.config.ini, {
        listen_addr: '127.0.0.1',
        listen_port: String(port),
        unix_socket_dir: '',
        auth_file: userlist,
        admin_users: opts.config.user,
        ...(asRoot ? { user: 'postgres' } : {}),
      })
    : [
        '[databases]',
        `* = host=${upstream.hostname} port=${upstream.port || 5432}`,
        '',
        '[pgbouncer]',
        'listen_addr = 127.0.0.1',
        `listen_port = ${port}`,
        'unix_socket_dir =',
        'auth_type = trust',
        `auth_file = ${userlist}`,
        `admin_users = ${user}`,
        'pool_mode = transaction',
        `default_pool_size = ${opts.poolSize ?? PASS_POOL_SIZE}`,
        'max_client_conn = 2000',
        'log_connections = 0',
        'log_disconnections = 0',
        ...(asRoot ? ['user = postgres'] : []),
        '',
      ].join('\n');
  const iniPath = path.join(dir, 'pgbouncer.ini');
  fs.writeFileSync(iniPath, ini, { mode: 0o644 });

  const child = spawn(PGBOUNCER, [iniPath], { stdio: ['ignore', 'pipe', 'pipe'] });
  const logged: Buffer[] = [];
  child.stdout.on('data', (b: Buffer) => logged.push(b));
  child.stderr.on('data', (b: Buffer) => logged.push(b));
  let exited = false;
  const gone = new Promise<void>((r) => child.once('exit', () => ((exited = true), r())));
  // Never keeps the test process alive, and never outlives it.
  child.unref();
  (child.stdout as unknown as { unref?(): void }).unref?.();
  (child.stderr as unknown as { unref?(): void }).unref?.();
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);
  const log = () => Buffer.concat(logged).toString('utf8');
  const admin = opts.config
    ? `${encodeURIComponent(opts.config.user)}:${encodeURIComponent(opts.config.password)}`
    : encodeURIComponent(user);
  const base = `postgresql://${admin}@127.0.0.1:${port}`;

  const show = async <T>(what: string): Promise<T[]> => {
    const c = new Client({ connectionString: `${base}/pgbouncer` });
    await c.connect();
    try {
      // The admin console speaks the simple protocol only: a query without parameters is sent that way.
      return (await c.query(`SHOW ${what}`)).rows as T[];
    } finally {
      await c.end().catch(() => undefined);
    }
  };

  const deadline = Date.now() + 15_000;
  for (;;) {
    if (exited) throw new Error(`pgbouncer exited at start:\n${log()}`);
    try {
      await show('version');
      break;
    } catch (err) {
      if (Date.now() > deadline) {
        kill();
        throw new Error(`pgbouncer did not answer on port ${port}: ${(err as Error).message}\n${log()}`, { cause: err });
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  const upstreamHost = `${upstream.hostname}:${upstream.port || 5432}`;
  return {
    port,
    pooled(directUrl) {
      const u = new URL(directUrl);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    isUpstream: (url) => {
      const u = new URL(url);
      return `${u.hostname}:${u.port || 5432}` === upstreamHost;
    },
    show,
    log,
    async stop() {
      process.removeListener('exit', kill);
      if (!exited) {
        child.ref(); // waited for now: the event loop must not end under the wait
        child.kill('SIGTERM');
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([gone, new Promise((r) => (timer = setTimeout(r, 5000)))]);
        clearTimeout(timer);
        if (!exited) kill();
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

let shared: { bouncer: Promise<PgBouncer>; users: number } | undefined;

/**
 * The PgBouncer of this test process on the pooler pass (started on first use, stopped when the last user releases
 * it). `release()` once done.
 */
export async function usePgBouncer(): Promise<PgBouncer & { release(): Promise<void> }> {
  if (!shared) {
    const s = { bouncer: startPgBouncer(), users: 0 };
    shared = s;
    s.bouncer.catch(() => {
      if (shared === s) shared = undefined;
    });
  }
  const s = shared;
  const bouncer = await s.bouncer;
  s.users++;
  let released = false;
  return {
    ...bouncer,
    async release() {
      if (released) return;
      released = true;
      s.users--;
      if (s.users === 0 && shared === s) {
        shared = undefined;
        await bouncer.stop();
      }
    },
  };
}
