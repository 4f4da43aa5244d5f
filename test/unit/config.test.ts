import assert from 'node:assert/strict';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config/config';

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

  test('a Postgres catalog does not bootstrap a database unless asked', () => {
    assert.equal(loadConfig({ DATABASE_URL: 'postgresql://u@h/db' }).bootstrapDatabase, undefined);
    assert.equal(loadConfig({ DATABASE_URL: 'postgresql://u@h/db', BOOTSTRAP_DATABASE: 'acme' }).bootstrapDatabase, 'acme');
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
    assert.throws(() => loadConfig({ RECLAIM_AFTER_SECONDS: '0', RECLAIM_INTERVAL_SECONDS: '-1' }), /RECLAIM_AFTER_SECONDS[\s\S]*RECLAIM_INTERVAL_SECONDS/);
  });

  test('cross-field rules', () => {
    assert.throws(() => loadConfig({ LIST_DEFAULT_LIMIT: '20', LIST_MAX_LIMIT: '10' }), /LIST_DEFAULT_LIMIT/);
    assert.throws(() => loadConfig({ OAUTH_JWKS_URI: 'https://idp/jwks' }), /OAUTH_ISSUER[\s\S]*OAUTH_AUDIENCE/);
  });
});
