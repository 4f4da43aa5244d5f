import { createHash, randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * Applies prisma/migrations the way `prisma migrate deploy` does, because Prisma's schema engine cannot be shipped
 * everywhere we run (air-gapped builds, the embedded PGlite catalog). Compatible on purpose, so an operator can
 * switch to the real CLI at any time:
 *  - the same advisory lock key (72707369), so this and `prisma migrate deploy` exclude each other and replicas
 *    starting together apply each migration once;
 *  - the same `_prisma_migrations` table, rows and SHA-256 checksums;
 *  - the same refusals: a non-empty schema without the table (P3005) and a failed migration (P3009).
 * Each migration.sql is sent as one simple-protocol script, as the schema engine does.
 */
export interface SqlSession {
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  /** Runs a multi-statement script in one round trip (implicit transaction). */
  exec(script: string): Promise<void>;
}

export const PRISMA_MIGRATE_LOCK_KEY = 72707369;
const LOCK_WAIT_MS = 120_000;

const CREATE_MIGRATIONS_TABLE = `CREATE TABLE "_prisma_migrations" (
    "id"                    VARCHAR(36) PRIMARY KEY NOT NULL,
    "checksum"              VARCHAR(64) NOT NULL,
    "finished_at"           TIMESTAMPTZ,
    "migration_name"        VARCHAR(255) NOT NULL,
    "logs"                  TEXT,
    "rolled_back_at"        TIMESTAMPTZ,
    "started_at"            TIMESTAMPTZ NOT NULL DEFAULT now(),
    "applied_steps_count"   INTEGER NOT NULL DEFAULT 0
);`;

export class MigrationError extends Error {}

export interface MigrationFile {
  name: string;
  sql: string;
  checksum: string;
}

export const checksumOf = (sql: string) => createHash('sha256').update(sql, 'utf8').digest('hex');

export function listMigrations(dir: string): MigrationFile[] {
  const lockFile = path.join(dir, 'migration_lock.toml');
  if (fs.existsSync(lockFile)) {
    const provider = /provider\s*=\s*"([^"]+)"/.exec(fs.readFileSync(lockFile, 'utf8'))?.[1];
    if (provider && provider !== 'postgresql') {
      throw new MigrationError(`P3019: migrations were made for provider '${provider}', not postgresql`);
    }
  }
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && fs.existsSync(path.join(dir, d.name, 'migration.sql')))
    .map((d) => d.name)
    .sort((a, b) => a.localeCompare(b))
    .map((name) => {
      const sql = fs.readFileSync(path.join(dir, name, 'migration.sql'), 'utf8');
      return { name, sql, checksum: checksumOf(sql) };
    });
}

async function acquireLock(session: SqlSession): Promise<void> {
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    const [row] = await session.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [PRISMA_MIGRATE_LOCK_KEY]);
    if (row.locked) return;
    if (Date.now() > deadline) throw new MigrationError(`timed out waiting for the migration lock${await lockHolder(session)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * Who holds the migration lock, for the timeout's message. A holder that sits idle for minutes is usually not a
 * migration: a pooler in transaction mode (PgBouncer) between a migrator and Postgres leaves the session-level lock
 * on whichever server connection took it, where it stays until that connection closes.
 */
async function lockHolder(session: SqlSession): Promise<string> {
  const rows = await session
    .query<{ pid: number; state: string | null; since: string | null; client: string | null; app: string | null }>(
      `SELECT l.pid, a.state, a.state_change::text AS since, a.client_addr::text AS client, a.application_name AS app
         FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'advisory' AND l.granted AND l.classid = 0 AND l.objid::bigint = $1 AND l.objsubid = 1`,
      [PRISMA_MIGRATE_LOCK_KEY],
    )
    .catch(() => []);
  if (rows.length === 0) return '';
  const [h] = rows;
  return (
    ` (advisory lock ${PRISMA_MIGRATE_LOCK_KEY}, held by backend ${h.pid}: ${h.state ?? 'unknown state'} since ${h.since ?? '?'}` +
    `, from ${h.client ?? 'a local socket'}${h.app ? `, application '${h.app}'` : ''}). Another migrator may still be running; ` +
    'if DATABASE_URL is a pooler in transaction mode, migrations must reach Postgres itself: set DATABASE_DIRECT_URL (docs/pooler.md)'
  );
}

/** Applies pending migrations; returns the names applied by this call. */
export async function applyMigrations(session: SqlSession, dir: string): Promise<string[]> {
  const migrations = listMigrations(dir);
  await acquireLock(session);
  try {
    const [{ present }] = await session.query<{ present: boolean }>(`SELECT to_regclass('_prisma_migrations') IS NOT NULL AS present`);
    if (!present) {
      const [{ n }] = await session.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM information_schema.tables
          WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`,
      );
      if (n > 0) {
        throw new MigrationError(
          'P3005: the database schema is not empty and has no _prisma_migrations table; baseline it first ' +
            '(prisma migrate resolve --applied <migration>)',
        );
      }
      await session.exec(CREATE_MIGRATIONS_TABLE);
    }
    const failed = await session.query<{ migration_name: string }>(
      `SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NULL AND rolled_back_at IS NULL`,
    );
    if (failed.length > 0) {
      throw new MigrationError(
        `P3009: migration ${failed.map((f) => f.migration_name).join(', ')} failed earlier; ` +
          'fix the database and mark it rolled back (prisma migrate resolve --rolled-back) before starting',
      );
    }
    const appliedRows = await session.query<{ migration_name: string }>(
      `SELECT migration_name FROM _prisma_migrations WHERE rolled_back_at IS NULL`,
    );
    const applied = new Set(appliedRows.map((r) => r.migration_name));
    const done: string[] = [];
    for (const m of migrations) {
      if (applied.has(m.name)) continue;
      const id = randomUUID();
      await session.query(`INSERT INTO _prisma_migrations (id, checksum, migration_name, started_at) VALUES ($1, $2, $3, now())`, [
        id,
        m.checksum,
        m.name,
      ]);
      try {
        await session.exec(m.sql);
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        await session.query(`UPDATE _prisma_migrations SET logs = $2 WHERE id = $1`, [id, message]);
        throw new MigrationError(`migration ${m.name} failed: ${message}`);
      }
      await session.query(`UPDATE _prisma_migrations SET applied_steps_count = applied_steps_count + 1 WHERE id = $1`, [id]);
      await session.query(`UPDATE _prisma_migrations SET finished_at = now() WHERE id = $1`, [id]);
      done.push(m.name);
    }
    return done;
  } finally {
    await session.query('SELECT pg_advisory_unlock($1)', [PRISMA_MIGRATE_LOCK_KEY]).catch(() => undefined);
  }
}
