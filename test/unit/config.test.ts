import assert from 'node:assert/strict';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/platform/config/config';

/** loadConfig: defaults, coercion and the start-up error that names every wrong variable. */
describe('configuration', () => {
  test('defaults describe the embedded setup', () => {
    const c = loadConfig({});
    assert.equal(c.port, 2333);
    assert.equal(c.databaseUrl, undefined);
    assert.equal(c.bootstrapDatabase, 'default', 'the embedded default bootstraps a first database');
    assert.equal(c.storageRoot, path.resolve('./data/tables'));
    assert.equal(c.redisUrl, undefined);
    assert.deepEqual(c.rateLimit, { limit: 1000, windowMs: 1000 });
    assert.equal(c.rateLimitFailClosed, false);
  });

  test('usage metering and quota defaults, and their validation', () => {
    const c = loadConfig({});
    assert.deepEqual(c.usage, {
      metering: true,
      flushIntervalMs: 10_000,
      refreshIntervalMs: 60_000,
      refreshTablesPerMinute: 600,
      refreshConcurrency: 4,
      fullScanMs: 24 * 3600_000,
    });
    assert.deepEqual(c.quotas, { maxTables: undefined, maxNamespaces: undefined, maxStorageBytes: undefined, maxRowsPerWrite: undefined });
    const q = loadConfig({
      QUOTA_MAX_TABLES: '100',
      QUOTA_MAX_STORAGE_BYTES: '1099511627776',
      USAGE_METERING: 'false',
      USAGE_REFRESH_INTERVAL_SECONDS: '0',
    });
    assert.equal(q.quotas.maxTables, 100);
    assert.equal(q.quotas.maxStorageBytes, 1024 ** 4);
    assert.equal(q.usage.metering, false);
    assert.equal(q.usage.refreshIntervalMs, 0);
    assert.throws(() => loadConfig({ USAGE_FLUSH_INTERVAL_SECONDS: '0' }), /USAGE_FLUSH_INTERVAL_SECONDS: must be an integer >= 1/);
    assert.throws(() => loadConfig({ QUOTA_MAX_TABLES: 'many' }), /QUOTA_MAX_TABLES: must be an integer >= 0/);
    assert.throws(() => loadConfig({ USAGE_REFRESH_TABLES_PER_MINUTE: '0' }), /USAGE_REFRESH_TABLES_PER_MINUTE/);
    assert.throws(() => loadConfig({ USAGE_REFRESH_CONCURRENCY: '0' }), /USAGE_REFRESH_CONCURRENCY: must be an integer >= 1/);
  });

  test('kept table handles are bounded by memory (a count only when the deprecated setting is given); the Lance session by bytes', () => {
    const c = loadConfig({});
    assert.deepEqual(c.tableHandles, { maxBytes: 32 * 1024 ** 2, idleMs: 300_000 });
    assert.deepEqual(c.lanceSession, { indexCacheBytes: 256 * 1024 ** 2, metadataCacheBytes: 64 * 1024 ** 2 });
    const old = loadConfig({ TABLE_HANDLE_CACHE_SIZE: '128', TABLE_HANDLE_CACHE_BYTES: '0', LANCE_METADATA_CACHE_BYTES: '1048576' });
    assert.deepEqual(old.tableHandles, { maxBytes: 0, max: 128, idleMs: 300_000 });
    assert.equal(old.lanceSession.metadataCacheBytes, 1024 ** 2);
    assert.throws(() => loadConfig({ TABLE_HANDLE_CACHE_BYTES: '-1' }), /TABLE_HANDLE_CACHE_BYTES: must be an integer >= 0/);
    assert.throws(() => loadConfig({ LANCE_INDEX_CACHE_BYTES: '1 GiB' }), /LANCE_INDEX_CACHE_BYTES/);
  });

  test('a Postgres catalog does not bootstrap a database unless asked', () => {
    assert.equal(loadConfig({ DATABASE_URL: 'postgresql://u@h/db' }).bootstrapDatabase, undefined);
    assert.equal(loadConfig({ DATABASE_URL: 'postgresql://u@h/db', BOOTSTRAP_DATABASE: 'acme' }).bootstrapDatabase, 'acme');
  });

  test('behind a pooler: migrations on DATABASE_DIRECT_URL, no session state, prepared statements off unless asked', () => {
    const direct = 'postgresql://u@pg:5432/db';
    const pooled = 'postgresql://u@pgbouncer:6432/db';
    // Straight to Postgres: migrations on the same URL, prepared statements on.
    const plain = loadConfig({ DATABASE_URL: direct });
    assert.deepEqual([plain.databaseDirectUrl, plain.dbPooler, plain.dbPreparedStatements], [direct, 'none', true]);
    assert.equal(loadConfig({}).databaseDirectUrl, undefined, 'the embedded catalog has no URL');
    // A direct URL apart from DATABASE_URL says a transaction pooler.
    const behind = loadConfig({ DATABASE_URL: pooled, DATABASE_DIRECT_URL: direct });
    assert.deepEqual(
      [behind.databaseUrl, behind.databaseDirectUrl, behind.dbPooler, behind.dbPreparedStatements],
      [pooled, direct, 'transaction', false],
    );
    // A pooler that carries prepared statements (PgBouncer >= 1.21, max_prepared_statements): asked for explicitly.
    assert.equal(
      loadConfig({ DATABASE_URL: pooled, DATABASE_DIRECT_URL: direct, DB_PREPARED_STATEMENTS: 'true' }).dbPreparedStatements,
      true,
    );
    // DB_POOLER=none: a direct URL for another reason (a migration role), no pooler.
    const role = loadConfig({ DATABASE_URL: pooled, DATABASE_DIRECT_URL: direct, DB_POOLER: 'none' });
    assert.deepEqual([role.dbPooler, role.dbPreparedStatements], ['none', true]);
    assert.equal(loadConfig({ DATABASE_URL: direct, DATABASE_DIRECT_URL: direct }).dbPooler, 'none');
    // Refused: a transaction pooler without Postgres itself for migrations, a direct URL without a catalog URL, bad values.
    assert.throws(() => loadConfig({ DATABASE_URL: pooled, DB_POOLER: 'transaction' }), /DB_POOLER: transaction needs DATABASE_DIRECT_URL/);
    assert.throws(
      () => loadConfig({ DATABASE_URL: direct, DATABASE_DIRECT_URL: direct, DB_POOLER: 'transaction' }),
      /DB_POOLER: transaction needs DATABASE_DIRECT_URL/,
    );
    assert.throws(() => loadConfig({ DATABASE_DIRECT_URL: direct }), /DATABASE_DIRECT_URL: needs DATABASE_URL/);
    assert.throws(() => loadConfig({ DATABASE_URL: direct, DB_POOLER: 'statement' }), /DB_POOLER: must be 'none' or 'transaction'/);
    assert.throws(
      () => loadConfig({ DATABASE_URL: direct, DATABASE_DIRECT_URL: 'mysql://h/db' }),
      /DATABASE_DIRECT_URL: must be a postgresql/,
    );
  });

  test('blank values read as unset; numbers and flags are coerced', () => {
    const c = loadConfig({ PORT: ' 8080 ', REDIS_URL: '  ', RATE_LIMIT_FAIL_CLOSED: 'true', BASE_PATH: 'lance' });
    assert.equal(c.port, 8080);
    assert.equal(c.redisUrl, undefined);
    assert.equal(c.rateLimitFailClosed, true);
    assert.equal(c.basePath, '/lance');
  });

  test('every wrong variable is named in one error', () => {
    assert.throws(
      () => loadConfig({ PORT: 'x', DATABASE_URL: 'mysql://h/db', ADMIN_API_KEY: 'short', BASE_PATH: '/a/' }),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        for (const name of ['PORT', 'DATABASE_URL', 'ADMIN_API_KEY', 'BASE_PATH']) assert.match(err.message, new RegExp(`${name}:`));
        return true;
      },
    );
  });

  test('reclaim age and interval: seconds, small values allowed, heartbeat well within the age', () => {
    assert.deepEqual(loadConfig({}).reclaim, { afterMs: 300_000, intervalMs: 60_000, heartbeatMs: 10_000 });
    assert.deepEqual(loadConfig({ RECLAIM_AFTER_SECONDS: '3', RECLAIM_INTERVAL_SECONDS: '0' }).reclaim, {
      afterMs: 3000,
      intervalMs: 0,
      heartbeatMs: 1000,
    });
    assert.throws(
      () => loadConfig({ RECLAIM_AFTER_SECONDS: '0', RECLAIM_INTERVAL_SECONDS: '-1' }),
      /RECLAIM_AFTER_SECONDS[\s\S]*RECLAIM_INTERVAL_SECONDS/,
    );
  });

  test('cross-field rules', () => {
    assert.throws(() => loadConfig({ LIST_DEFAULT_LIMIT: '20', LIST_MAX_LIMIT: '10' }), /LIST_DEFAULT_LIMIT/);
    assert.throws(() => loadConfig({ OAUTH_JWKS_URI: 'https://idp/jwks' }), /OAUTH_ISSUER[\s\S]*OAUTH_AUDIENCE/);
  });
});

describe('EVENT_SINKS', () => {
  test('takes a JSON array of fleet sinks, and names each problem with its place', () => {
    const secret = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;
    const ok = loadConfig({
      EVENT_SINKS: JSON.stringify([
        { name: 'bus', kind: 'nats', url: 'nats://127.0.0.1:4222' },
        { name: 'hook', kind: 'webhook', url: 'https://example.com/x', secret },
      ]),
    });
    assert.deepEqual(
      ok.events.sinks!.map((s) => [s.name, s.kind]),
      [
        ['bus', 'nats'],
        ['hook', 'webhook'],
      ],
    );
    assert.equal(loadConfig({}).events.sinks, undefined, 'unset: the catalog keeps the configured sinks it has');
    assert.deepEqual(loadConfig({ EVENT_SINKS: '[]' }).events.sinks, []);
    assert.throws(() => loadConfig({ EVENT_SINKS: 'nope' }), /EVENT_SINKS: must be a JSON array/);
    assert.throws(
      () => loadConfig({ EVENT_SINKS: '[{"name":"h","kind":"webhook","url":"https://x.example"}]' }),
      /EVENT_SINKS\[0\]: a webhook needs its signing 'secret'/,
    );
    assert.throws(() => loadConfig({ EVENT_SINKS: '[{"name":"n","kind":"kafka","url":"x"}]' }), /EVENT_SINKS\[0\]: kind/);
    assert.throws(
      () => loadConfig({ EVENT_SINKS: '[{"name":"a","kind":"nats","url":"nats://h:1"},{"name":"a","kind":"nats","url":"nats://h:2"}]' }),
      /EVENT_SINKS\[1\]: name 'a' is used twice/,
    );
  });
});
