import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../src/platform/config/config';
import { CatalogDb, openCatalogDb } from '../src/platform/db/catalog-db';
import { createPgDatabase } from './helpers/gateway';

/**
 * The catalog's direct reads (CatalogDb.read) on Postgres: a named hot read is prepared once per pooled connection
 * (DB_PREPARED_STATEMENTS, on by default), an unnamed one never; a prepared statement broken by a change of its table
 * (another replica's migration) or gone from the server (a pooler in between) is answered unprepared, and the process
 * stops preparing.
 */
describe('catalog reads and prepared statements [postgres]', () => {
  let pg: Awaited<ReturnType<typeof createPgDatabase>>;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'lgw-catalog-read-'));
  const opened: CatalogDb[] = [];
  // One pooled connection: pg_prepared_statements lists that session's statements.
  const open = async (env: Record<string, string> = {}) => {
    const db = await openCatalogDb(loadConfig({ DATABASE_URL: pg.url, DB_POOL_MAX: '1', DATA_DIR: dataDir, ...env }));
    opened.push(db);
    return db;
  };
  const preparedOn = async (db: CatalogDb) =>
    (await db.read<{ name: string }>('SELECT name FROM pg_prepared_statements ORDER BY name', [])).map((r) => r.name);

  before(async () => {
    pg = await createPgDatabase();
  });
  after(async () => {
    for (const db of opened) await db.close();
    await pg?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('prepares a named read once per connection and answers it as before; unnamed reads are not prepared', async () => {
    const db = await open();
    await db.read('CREATE TABLE things (id int, label text)', []);
    await db.read("INSERT INTO things VALUES (1, 'one'), (2, 'two')", []);
    for (let i = 0; i < 3; i++) {
      assert.deepEqual(await db.read('SELECT id, label FROM things WHERE id = $1', [2], 'lgw_test_thing'), [{ id: 2, label: 'two' }]);
    }
    assert.deepEqual(await db.read('SELECT count(*)::int AS n FROM things', []), [{ n: 2 }]);
    assert.deepEqual(await preparedOn(db), ['lgw_test_thing']);
  });

  it('answers a prepared read whose table changed under it, unprepared, and prepares nothing more', async () => {
    const db = await open();
    await db.read('CREATE TABLE widgets (id int, size int)', []);
    await db.read('INSERT INTO widgets VALUES (1, 10)', []);
    assert.deepEqual(await db.read('SELECT id, size FROM widgets', [], 'lgw_test_widgets'), [{ id: 1, size: 10 }]);
    await db.read('ALTER TABLE widgets ALTER COLUMN size TYPE text', []); // the result type changes: 0A000 next time
    assert.deepEqual(await db.read('SELECT id, size FROM widgets', [], 'lgw_test_widgets'), [{ id: 1, size: '10' }]);
    assert.deepEqual(await db.read('SELECT id FROM widgets', [], 'lgw_test_other'), [{ id: 1 }]);
    // The failed connection was replaced by the pool, and nothing is prepared on its successor.
    assert.deepEqual(await preparedOn(db), [], 'nothing prepared after the fallback');
  });

  it('answers a prepared read whose statement vanished from the server (a pooler in between), unprepared', async () => {
    const db = await open();
    assert.deepEqual(await db.read('SELECT 7 AS seven', [], 'lgw_test_gone'), [{ seven: 7 }]);
    await db.read('DEALLOCATE lgw_test_gone', []); // the driver still believes it prepared: it sends no Parse next time
    assert.deepEqual(await db.read('SELECT 7 AS seven', [], 'lgw_test_gone'), [{ seven: 7 }]);
    assert.deepEqual(await db.read('SELECT 8 AS eight', [], 'lgw_test_next'), [{ eight: 8 }]);
    assert.deepEqual(await preparedOn(db), [], 'nothing prepared after the fallback');
  });

  it('prepares nothing with DB_PREPARED_STATEMENTS=false', async () => {
    const db = await open({ DB_PREPARED_STATEMENTS: 'false' });
    assert.deepEqual(await db.read('SELECT 1 AS one', [], 'lgw_test_off'), [{ one: 1 }]);
    assert.deepEqual(await preparedOn(db), []);
  });

  it("stops a query running past DB_QUERY_TIMEOUT_MS, the catalog's reads and Prisma's alike, and the pool goes on", async () => {
    const db = await open({ DB_QUERY_TIMEOUT_MS: '300' });
    // Shorter than the timeout: answered.
    assert.deepEqual(await db.read('SELECT pg_sleep(0.1)::text AS slept', []), [{ slept: '' }]);
    // Longer: failed as pg's own query_timeout would, long before the statement would have ended (20 s).
    let t0 = Date.now();
    await assert.rejects(db.read('SELECT pg_sleep(20)', []), /Query read timeout/);
    assert.ok(Date.now() - t0 < 15_000, 'the read was stopped, not waited for');
    assert.deepEqual(await db.read('SELECT 1 AS n', []), [{ n: 1 }], 'the pool replaced the connection');
    t0 = Date.now();
    await assert.rejects(db.prisma.$queryRawUnsafe('SELECT pg_sleep(20)'));
    assert.ok(Date.now() - t0 < 15_000, 'the Prisma query was stopped, not waited for');
    assert.deepEqual(await db.prisma.$queryRawUnsafe('SELECT 2 AS n'), [{ n: 2 }]);
  });
});
