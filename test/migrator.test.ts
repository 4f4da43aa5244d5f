import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { PGlite } from '@electric-sql/pglite';
import { Client } from 'pg';
import { MIGRATIONS_DIR } from '../src/platform/db/catalog-db';
import { applyMigrations, checksumOf, listMigrations, MigrationError, SqlSession } from '../src/platform/db/migrator';
import { createPgDatabase } from './helpers/gateway';

function pgSession(c: Client): SqlSession {
  return { query: async (sql, params) => (await c.query(sql, params)).rows, exec: async (s) => void (await c.query(s)) };
}

async function connect(url: string): Promise<Client> {
  const c = new Client({ connectionString: url });
  await c.connect();
  return c;
}

function tempMigrations(files: Record<string, string>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lgw-mig-'));
  fs.writeFileSync(path.join(dir, 'migration_lock.toml'), 'provider = "postgresql"\n');
  for (const [name, sql] of Object.entries(files)) {
    fs.mkdirSync(path.join(dir, name));
    fs.writeFileSync(path.join(dir, name, 'migration.sql'), sql);
  }
  return dir;
}

describe('migration runner (compatible with prisma migrate deploy) [postgres]', () => {
  const cleanups: (() => Promise<void>)[] = [];
  after(async () => {
    for (const c of cleanups) await c();
  });

  async function freshDb() {
    const db = await createPgDatabase('lgw_mig');
    cleanups.push(db.drop);
    return db;
  }

  it('applies the project migrations once, recording Prisma-compatible rows', async () => {
    const db = await freshDb();
    const c = await connect(db.url);
    try {
      const applied = await applyMigrations(pgSession(c), MIGRATIONS_DIR);
      const expected = listMigrations(MIGRATIONS_DIR);
      assert.deepEqual(
        applied,
        expected.map((m) => m.name),
      );
      const rows = (
        await c.query(
          `SELECT migration_name, checksum, finished_at, applied_steps_count, rolled_back_at, logs
             FROM _prisma_migrations ORDER BY migration_name`,
        )
      ).rows;
      assert.equal(rows.length, expected.length);
      for (const [i, r] of rows.entries()) {
        assert.equal(r.migration_name, expected[i].name);
        // Prisma's checksum: SHA-256 of the file's text as 64 lowercase hex digits.
        const onDisk = fs.readFileSync(path.join(MIGRATIONS_DIR, r.migration_name, 'migration.sql'), 'utf8');
        assert.equal(r.checksum, checksumOf(onDisk));
        assert.match(r.checksum, /^[0-9a-f]{64}$/);
        assert.ok(r.finished_at instanceof Date);
        assert.equal(r.applied_steps_count, 1);
        assert.equal(r.rolled_back_at, null);
      }
      const tables = (await c.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1`)).rows.map(
        (r) => r.table_name,
      );
      for (const t of ['_prisma_migrations', 'api_keys', 'catalog_transactions', 'databases', 'namespaces', 'tables']) {
        assert.ok(tables.includes(t), `table ${t} exists`);
      }
      assert.deepEqual(await applyMigrations(pgSession(c), MIGRATIONS_DIR), [], 'a second run applies nothing');
    } finally {
      await c.end();
    }
  });

  it('lets replicas start together: each migration is applied exactly once', async () => {
    const db = await freshDb();
    const clients = await Promise.all([1, 2, 3, 4].map(() => connect(db.url)));
    try {
      const results = await Promise.all(clients.map((c) => applyMigrations(pgSession(c), MIGRATIONS_DIR)));
      const all = results.flat();
      assert.deepEqual(
        all.sort(),
        listMigrations(MIGRATIONS_DIR)
          .map((m) => m.name)
          .sort(),
      );
      const { rows } = await clients[0].query(`SELECT count(*)::int AS n FROM _prisma_migrations`);
      assert.equal(rows[0].n, listMigrations(MIGRATIONS_DIR).length);
    } finally {
      await Promise.all(clients.map((c) => c.end()));
    }
  });

  it('records a failed migration and refuses to go on until it is resolved (P3009)', async () => {
    const db = await freshDb();
    const dir = tempMigrations({
      '20200101000000_ok': 'CREATE TABLE a (id int);',
      '20200102000000_bad': 'CREATE TABLE b (id int); SELECT * FROM no_such_table;',
      '20200103000000_later': 'CREATE TABLE c (id int);',
    });
    const c = await connect(db.url);
    try {
      await assert.rejects(
        applyMigrations(pgSession(c), dir),
        (e: Error) => e instanceof MigrationError && /20200102000000_bad/.test(e.message),
      );
      const rows = (await c.query(`SELECT migration_name, finished_at, logs FROM _prisma_migrations ORDER BY 1`)).rows;
      assert.equal(rows.length, 2);
      assert.ok(rows[0].finished_at);
      assert.equal(rows[1].finished_at, null);
      assert.match(rows[1].logs, /no_such_table/);
      // The failed script ran as one implicit transaction: nothing of it remains.
      assert.equal((await c.query(`SELECT to_regclass('b') AS t`)).rows[0].t, null);
      await assert.rejects(applyMigrations(pgSession(c), dir), /P3009/);
      assert.equal((await c.query(`SELECT to_regclass('c') AS t`)).rows[0].t, null, 'later migrations did not run');
    } finally {
      await c.end();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a non-empty schema without a migrations table (P3005)', async () => {
    const db = await freshDb();
    const c = await connect(db.url);
    try {
      await c.query('CREATE TABLE legacy (id int)');
      await assert.rejects(applyMigrations(pgSession(c), MIGRATIONS_DIR), /P3005/);
      assert.equal((await c.query(`SELECT to_regclass('_prisma_migrations') AS t`)).rows[0].t, null);
    } finally {
      await c.end();
    }
  });

  it('refuses migrations made for another provider (P3019)', () => {
    const dir = tempMigrations({ '1_x': 'SELECT 1;' });
    fs.writeFileSync(path.join(dir, 'migration_lock.toml'), 'provider = "mysql"\n');
    try {
      assert.throws(() => listMigrations(dir), /P3019/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('migration runner [embedded]', () => {
  let dir: string;
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lgw-pglite-'));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('applies the same migrations to PGlite and keeps them applied across restarts', async () => {
    const open = async () => {
      const db = await PGlite.create(dir);
      const session: SqlSession = {
        query: async (sql, params) => (await db.query(sql, params)).rows as never[],
        exec: async (s) => void (await db.exec(s)),
      };
      return { db, session };
    };
    const first = await open();
    const names = listMigrations(MIGRATIONS_DIR).map((m) => m.name);
    assert.deepEqual(await applyMigrations(first.session, MIGRATIONS_DIR), names);
    await first.db.close();
    const second = await open();
    try {
      assert.deepEqual(await applyMigrations(second.session, MIGRATIONS_DIR), []);
      const rows = await second.session.query<{ n: number }>('SELECT count(*)::int AS n FROM _prisma_migrations');
      assert.equal(rows[0].n, names.length);
    } finally {
      await second.db.close();
    }
  });
});
