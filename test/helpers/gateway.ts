import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import { describe } from 'node:test';
import { Client } from 'pg';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createGateway } from '../../src/app';
import { AppConfig, loadConfig } from '../../src/platform/config/config';
import { TEST_POOLER, usePgBouncer } from './pgbouncer';
import { freshPrefix, TEST_BUCKET, useLocalS3 } from './s3';

/**
 * Test harness: real gateways (in-process, on a loopback port) over a real catalog — a fresh Postgres database per
 * gateway on the local server, or an embedded PGlite — and real Lance tables in a temporary folder.
 */
export type CatalogKind = 'postgres' | 'embedded';

/** Admin connection used to create per-suite databases (CI: the database .ci/run made). */
export const PG_ADMIN_URL = process.env.TEST_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
export const ADMIN_KEY = 'test-operator-key-0123456789';

/** Which catalogs the suites run against: both by default; TEST_CATALOGS=postgres (or embedded) narrows it. */
export const CATALOG_KINDS: CatalogKind[] = (process.env.TEST_CATALOGS ?? 'postgres,embedded')
  .split(',')
  .map((s) => s.trim())
  .filter((s): s is CatalogKind => s === 'postgres' || s === 'embedded');

/**
 * Where the gateways of this test process keep tables: a local folder, or (TEST_STORAGE=s3, the object-store pass
 * of scripts/run-tests.js) a fresh prefix per gateway on a local S3-compatible server (test/helpers/s3.ts).
 */
export const TEST_STORAGE: 'local' | 's3' = process.env.TEST_STORAGE === 's3' ? 's3' : 'local';

/**
 * Runs `suite` once per catalog kind, as `describe('<name> [<kind>]')` (`[<kind>, s3]` on the object-store pass,
 * `[postgres, pgbouncer]` on the pooler pass).
 */
export function forEachCatalog(name: string, suite: (kind: CatalogKind) => void): void {
  for (const kind of CATALOG_KINDS) {
    const pass = [kind, ...(TEST_STORAGE === 's3' ? ['s3'] : []), ...(TEST_POOLER && kind === 'postgres' ? [TEST_POOLER] : [])];
    describe(`${name} [${pass.join(', ')}]`, () => suite(kind));
  }
}

export function pgUrlFor(database: string): string {
  const u = new URL(PG_ADMIN_URL);
  u.pathname = `/${database}`;
  return u.toString();
}

export async function withPgAdmin<T>(fn: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: PG_ADMIN_URL });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** A fresh, empty Postgres database; `drop()` removes it (terminating leftover sessions). */
export async function createPgDatabase(prefix = 'lgw_test'): Promise<{ name: string; url: string; drop(): Promise<void> }> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  await withPgAdmin((c) => c.query(`CREATE DATABASE "${name}"`));
  return {
    name,
    url: pgUrlFor(name),
    drop: () =>
      withPgAdmin(async (c) => {
        await c.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, [name]);
        await c.query(`DROP DATABASE IF EXISTS "${name}"`);
      }),
  };
}

export interface TestGateway {
  url: string;
  app: NestFastifyApplication;
  config: AppConfig;
  dataDir: string;
  pgDatabase?: string;
  /** Stops the gateway and removes its database and files. */
  close(): Promise<void>;
}

/**
 * Two replicas of one deployment: their own Postgres catalog database (`prefix`), shared by both, and the first's
 * storage root. Call it from `before`, and `close()` from `after`.
 */
export async function twoReplicas(
  prefix: string,
  env: Record<string, string>,
): Promise<{ a: TestGateway; b: TestGateway; databaseUrl: string; close(): Promise<void> }> {
  const pg = await createPgDatabase(prefix);
  const shared = { DATABASE_URL: pg.url, ...env };
  const a = await startGateway('postgres', shared);
  const b = await startGateway('postgres', { ...shared, STORAGE_ROOT: a.config.storageRoot }).catch(async (err) => {
    await a.close();
    await pg.drop();
    throw err;
  });
  return {
    a,
    b,
    databaseUrl: pg.url,
    async close() {
      await a.close();
      await b.close();
      await pg.drop();
    },
  };
}

export async function startGateway(
  kind: CatalogKind,
  env: Record<string, string> = {},
  opts: { logStream?: NodeJS.WritableStream } = {},
): Promise<TestGateway> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'lgw-test-'));
  const pg = kind === 'postgres' && !env.DATABASE_URL ? await createPgDatabase() : undefined;
  // The object-store pass: tables on the local S3 server, and the same options vended to namespace-mode clients.
  const s3 = TEST_STORAGE === 's3' && env.STORAGE_ROOT === undefined && env.STORAGE_PROFILES === undefined ? await useLocalS3() : undefined;
  const storageEnv: Record<string, string> = s3
    ? {
        STORAGE_ROOT: `s3://${TEST_BUCKET}/${freshPrefix()}`,
        STORAGE_OPTIONS: JSON.stringify(s3.options),
        STORAGE_CLIENT_OPTIONS: JSON.stringify(s3.options),
      }
    : {};
  // The pooler pass (TEST_POOLER=pgbouncer): a catalog on the tests' Postgres is reached through PgBouncer in
  // transaction mode, its migrations on Postgres itself, unless the test chose its own DATABASE_DIRECT_URL.
  const directUrl = pg?.url ?? env.DATABASE_URL;
  const bouncer =
    kind === 'postgres' && TEST_POOLER && directUrl && env.DATABASE_DIRECT_URL === undefined ? await usePgBouncer() : undefined;
  const poolerEnv: Record<string, string> =
    bouncer && directUrl && bouncer.isUpstream(directUrl)
      ? { DATABASE_URL: bouncer.pooled(directUrl), DATABASE_DIRECT_URL: directUrl }
      : {};
  const release = async () => {
    await s3?.release();
    await bouncer?.release();
  };
  let config: AppConfig;
  let app: NestFastifyApplication;
  try {
    config = loadConfig({
      DATA_DIR: dataDir,
      ADMIN_API_KEY: ADMIN_KEY,
      BOOTSTRAP_DATABASE: '',
      ...(pg ? { DATABASE_URL: pg.url } : {}),
      ...storageEnv,
      ...env,
      ...poolerEnv,
    });
    app = await createGateway(config, {
      logger: process.env.TEST_LOGS || opts.logStream ? undefined : false,
      logStream: opts.logStream as never,
    });
  } catch (err) {
    await release();
    throw err;
  }
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.getHttpServer().address() as { port: number };
  return {
    url: `http://127.0.0.1:${address.port}`,
    app,
    config,
    dataDir,
    pgDatabase: pg?.name,
    async close() {
      await app.close();
      if (pg) await pg.drop();
      await release();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface Reply<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

/** A tiny JSON HTTP client bound to a base URL and default headers. */
export class Api {
  constructor(
    readonly base: string,
    readonly headers: Record<string, string> = {},
  ) {}

  with(headers: Record<string, string>): Api {
    return new Api(this.base, { ...this.headers, ...headers });
  }

  async request<T = any>(method: string, p: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply<T>> {
    const h: Record<string, string> = { ...this.headers, ...headers };
    let payload: string | Buffer | undefined;
    if (Buffer.isBuffer(body)) {
      payload = body; // bytes as they are (an Arrow stream): the caller sends their content-type
    } else if (body !== undefined) {
      payload = typeof body === 'string' ? body : JSON.stringify(body);
      h['content-type'] ??= 'application/json';
    }
    const res = await fetch(this.base + p, { method, headers: h, body: payload });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = text;
    }
    return { status: res.status, headers: res.headers, body: parsed as T, text };
  }

  get<T = any>(p: string, headers?: Record<string, string>) {
    return this.request<T>('GET', p, undefined, headers);
  }
  post<T = any>(p: string, body: unknown = {}, headers?: Record<string, string>) {
    return this.request<T>('POST', p, body, headers);
  }
  delete<T = any>(p: string, headers?: Record<string, string>) {
    return this.request<T>('DELETE', p, undefined, headers);
  }
}

export interface Tenant {
  name: string;
  writeKey: string;
  readKey: string;
  /** Api with the write key and the database header. */
  api: Api;
  /** Api with the read key and the database header. */
  reader: Api;
}

export function operator(gw: { url: string }): Api {
  return new Api(gw.url, { 'x-api-key': ADMIN_KEY });
}

let tenantCounter = 0;

/** Creates a database with a write and a read key through the operator API. */
export async function newTenant(gw: { url: string }, name = `db${++tenantCounter}_${randomBytes(3).toString('hex')}`): Promise<Tenant> {
  const op = operator(gw);
  const created = await op.post('/admin/v1/databases', { name });
  if (created.status !== 201) throw new Error(`could not create database: ${created.status} ${created.text}`);
  const w = await op.post(`/admin/v1/databases/${name}/api-keys`, { role: 'write' });
  const r = await op.post(`/admin/v1/databases/${name}/api-keys`, { role: 'read' });
  const headers = (key: string) => ({ 'x-api-key': key, 'x-service-database': name });
  return {
    name,
    writeKey: w.body.api_key,
    readKey: r.body.api_key,
    api: new Api(gw.url, headers(w.body.api_key)),
    reader: new Api(gw.url, headers(r.body.api_key)),
  };
}

/**
 * A request through node:http, which (unlike fetch) sends the path exactly as given (no folding of `.`/`..`
 * segments) and lets the test choose the Host header and the source address (`localAddress`, e.g. 127.0.0.2). A
 * string body is sent as is, anything else as JSON.
 */
export function rawRequest(
  base: string,
  method: string,
  rawPath: string,
  headers: Record<string, string> = {},
  body?: unknown,
  localAddress?: string,
): Promise<Reply> {
  const u = new URL(base);
  const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: u.hostname,
        port: Number(u.port),
        localAddress,
        method,
        path: rawPath,
        setHost: !('host' in headers),
        headers: {
          ...headers,
          ...(payload !== undefined ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            parsed = text;
          }
          const h = new Headers();
          for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') h.set(k, v);
          resolve({ status: res.statusCode ?? 0, headers: h, body: parsed, text });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** `$`-joined and percent-encoded, as the official clients build `{id}`. */
export const idPath = (...parts: string[]) => encodeURIComponent(parts.length === 0 ? '$' : parts.join('$'));

export { eventually } from './eventually';
