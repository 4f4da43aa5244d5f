import * as fs from 'node:fs';
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';
import { PrismaPg } from '@prisma/adapter-pg';
import { Pool, Query, QueryResult } from 'pg';
import { PrismaPGlite } from 'pglite-prisma-adapter';
import { AppConfig } from '../config/config';
import { PrismaClient } from '../../generated/prisma/client';
import { applyMigrations, SqlSession } from './migrator';
import type { MigrateJob, MigrateOutcome } from './migrate-worker';
import { watchQueries } from './query-watchdog';

/** The migrations folder, found from both src/ (ts) and dist/src/ (compiled). */
export const MIGRATIONS_DIR = [
  path.resolve(__dirname, '../../../prisma/migrations'),
  path.resolve(__dirname, '../../../../prisma/migrations'),
].find((d) => fs.existsSync(d)) as string;

/**
 * The catalog's connection: Prisma on a bounded `pg` pool for a real Postgres (DATABASE_URL), or on PGlite, the
 * embedded Postgres, under DATA_DIR/catalog for the zero-configuration default.
 *
 * DATABASE_URL may be a pooler in transaction mode (DB_POOLER=transaction, docs/pooler.md). Then nothing here relies
 * on a session: every statement of the pool is one transaction or inside a unit of work's, locks are row locks and
 * transaction-scoped advisory locks, the identity caches poll instead of LISTEN, and the query watchdog destroys its
 * own socket (PgBouncer then closes the server connection that was running the query; none is handed on busy). Only
 * migrations need a session (a session-level advisory lock and multi-statement scripts): they run on their own
 * connection to DATABASE_DIRECT_URL, Postgres itself.
 */
export interface CatalogDb {
  readonly kind: 'postgres' | 'embedded';
  readonly prisma: PrismaClient;
  /**
   * One read-only statement straight on the driver (`pg` pool or PGlite), without the ORM: for the hot catalog reads
   * whose cost was Prisma's client, not Postgres'. Only UnitOfWork calls it, and only outside a unit of work (a
   * statement inside one must run on its transaction). Rows come back as the driver gives them: uuid and text as
   * strings, timestamptz as Date, jsonb parsed. `statement` names a hot read whose SQL text never changes: Postgres
   * prepares it once per pooled connection (DB_PREPARED_STATEMENTS; PGlite ignores it) instead of parsing and
   * planning it on every call. One name, one text: a name must never be given to another query.
   */
  read<T>(sql: string, params: readonly unknown[], statement?: string): Promise<T[]>;
  migrate(): Promise<string[]>;
  /** Pool occupancy for metrics (null for the embedded catalog, which has one in-process connection). */
  poolStats(): { total: number; idle: number; waiting: number } | null;
  close(): Promise<void>;
}

/** Injection token of the CatalogDb. */
export const CATALOG_DB = Symbol('CATALOG_DB');

export async function openCatalogDb(config: AppConfig): Promise<CatalogDb> {
  return config.databaseUrl ? openPostgres(config, config.databaseUrl) : openEmbedded(config);
}

/** SQLSTATEs after which CatalogDb.read stops preparing statements (see there). */
const PREPARED_STATEMENT_FAILURES = new Set(['0A000', '26000', '42P05']);

function openPostgres(config: AppConfig, url: string): CatalogDb {
  let prepared = config.dbPreparedStatements;
  // The prepared reads are keyset queries, whose generic plan is always the right one (an index range scan). Left to
  // choose, Postgres keeps planning a scoped listing's ranges afresh on every call (about 2 ms each: 0.3 ms with the
  // generic plan; docs/performance.md, "Grants"). Only named statements have a plan cache: Prisma's are not affected.
  // Set as a start-up parameter of each connection (no statement of its own, nothing racing the first query), unless
  // the URL brings its own `options`. Not behind a transaction pooler: a session setting would land on whichever
  // server connection it reached, and stay there for other clients (set it on the role instead: docs/pooler.md).
  const generic = prepared && config.dbPooler === 'none' && !/[?&]options=/.test(url);
  const pool = new Pool({
    connectionString: url,
    ...(generic ? { options: '-c plan_cache_mode=force_generic_plan' } : {}),
    max: config.dbPoolMax,
    connectionTimeoutMillis: config.dbConnectTimeoutMs,
    idleTimeoutMillis: 30_000,
    keepAlive: true,
  });
  // An idle connection dropped by the server must not crash the process; the next query reconnects.
  pool.on('error', () => undefined);
  // A query on a connection whose server vanished (no RST) must not hang a request until TCP gives up
  // (DB_QUERY_TIMEOUT_MS; not pg's query_timeout, see query-watchdog.ts).
  const stopWatching = watchQueries(pool, config.dbQueryTimeoutMs);
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
  return {
    kind: 'postgres',
    prisma,
    read: async <T>(sql: string, params: readonly unknown[], statement?: string) => {
      const values = params as unknown[];
      if (!statement || !prepared) return (await pool.query(sql, values)).rows as T[];
      try {
        return (await namedQuery(pool, statement, sql, values)).rows as T[];
      } catch (err) {
        // 0A000 "cached plan must not change result type": a migration of another replica changed a table under a
        // prepared statement. 26000 "prepared statement does not exist" / 42P05 "already exists": a pooler between
        // us and Postgres (PgBouncer in transaction mode) moved the statement to another server connection. Either
        // way this process stops preparing and asks again unprepared (the pool has dropped the failed connection).
        if (!PREPARED_STATEMENT_FAILURES.has((err as { code?: string }).code ?? '')) throw err;
        prepared = false;
        return (await pool.query(sql, values)).rows as T[];
      }
    },
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    migrate() {
      // Postgres itself (DATABASE_DIRECT_URL, else DATABASE_URL): the migration lock is session-level. In a worker
      // thread, on a connection of its own (migrate-worker.ts says why).
      return migrateInWorker({ url: config.databaseDirectUrl ?? url, dir: MIGRATIONS_DIR, connectTimeoutMs: config.dbConnectTimeoutMs });
    },
    async close() {
      stopWatching();
      await prisma.$disconnect().catch(() => undefined);
      await pool.end().catch(() => undefined);
    },
  };
}

/** Runs migrate-worker.ts on `job` and answers what it applied, or rejects with its error (message and SQLSTATE). */
function migrateInWorker(job: MigrateJob): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(path.join(__dirname, 'migrate-worker.js'), { workerData: job });
    let outcome: MigrateOutcome | undefined;
    worker.once('message', (m: MigrateOutcome) => (outcome = m));
    worker.once('error', reject);
    worker.once('exit', (code) => {
      if (!outcome) reject(new Error(`the migration worker exited (code ${code}) without an answer`));
      else if ('applied' in outcome) resolve(outcome.applied);
      else reject(Object.assign(new Error(outcome.error.message), outcome.error.code ? { code: outcome.error.code } : {}));
    });
  });
}

/**
 * A named (prepared) query through the pool. Given a config object (`{ name, text, values }`), pg copies it on every
 * call through its property descriptors, about 5 µs of CPU per catalog read (3% of a describe's profile); a query
 * made from its text and then named is not copied. The pool answers a query object with a promise of its result, as
 * it does a config object (pg's typings say otherwise, and do not declare the name the query carries).
 */
function namedQuery(pool: Pool, name: string, text: string, values: unknown[]): Promise<QueryResult> {
  const query = new Query(text, values);
  (query as unknown as { name: string }).name = name;
  return pool.query(query) as unknown as Promise<QueryResult>;
}

async function openEmbedded(config: AppConfig): Promise<CatalogDb> {
  const dir = path.join(config.dataDir, 'catalog');
  fs.mkdirSync(dir, { recursive: true });
  const pglite = await PGlite.create(dir);
  const prisma = new PrismaClient({ adapter: new PrismaPGlite(pglite) });
  return {
    kind: 'embedded',
    prisma,
    read: async <T>(sql: string, params: readonly unknown[]) => (await pglite.query<T>(sql, params as unknown[])).rows,
    poolStats: () => null,
    migrate() {
      const session: SqlSession = {
        query: async (sql, params) => (await pglite.query(sql, params)).rows as never[],
        exec: async (script) => void (await pglite.exec(script)),
      };
      return applyMigrations(session, MIGRATIONS_DIR);
    },
    async close() {
      await prisma.$disconnect().catch(() => undefined);
      await pglite.close().catch(() => undefined);
    },
  };
}
