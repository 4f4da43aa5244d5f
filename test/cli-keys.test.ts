import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { Api, eventually, startGateway } from './helpers/gateway';
import { useCli } from './helpers/cli';

/** The operator CLI's key commands of issue 34 (names, expiry, rotation, rate limits, grants), beside a running gateway. */

describe('operator CLI: keys (Postgres catalog)', () => {
  const h = useCli('lgw_cli_keys');
  const { cli, ok } = h;
  before(async () => {
    ok(await cli('databases', 'create', 'acme'));
    h.gw = await startGateway('postgres', { DATABASE_URL: h.db.url });
  });

  it('keys create/rotate/update: name, owner, expiry, rate limit and rotated_from (issue 34)', async () => {
    const made = ok(
      await cli(
        'keys',
        'create',
        'acme',
        '--role',
        'read',
        '--name',
        'etl',
        '--owner',
        'team-data',
        '--expires',
        '2999-01-01T00:00:00Z',
        '--rate-limit',
        '5/60000',
      ),
    );
    assert.equal(made.name, 'etl');
    assert.equal(made.owner, 'team-data');
    assert.equal(made.expires_at, '2999-01-01T00:00:00.000Z');
    assert.deepEqual(made.rate_limit, { limit: 5, window_ms: 60000 });
    const rotated = ok(await cli('keys', 'rotate', 'acme', made.id, '--overlap-seconds', '3600'));
    assert.notEqual(rotated.id, made.id);
    assert.match(rotated.api_key, /^lgw_/);
    assert.equal(rotated.rotated_from, made.id);
    assert.equal(rotated.name, 'etl');
    assert.deepEqual(rotated.rate_limit, { limit: 5, window_ms: 60000 });
    const edited = ok(await cli('keys', 'update', 'acme', rotated.id, '--owner', '', '--rate-limit', 'none', '--expires', 'never'));
    assert.equal(edited.owner, null);
    assert.equal(edited.rate_limit, null);
    assert.equal(edited.expires_at, null);
    assert.equal(edited.name, 'etl');
    const r = await cli('keys', 'list', 'acme');
    const listed = ok(r).api_keys;
    const old = listed.find((k: any) => k.id === made.id);
    assert.ok(Date.parse(old.expires_at) <= Date.now() + 3600_000, 'the old key ends with the overlap');
    assert.equal(listed.find((k: any) => k.id === rotated.id).rotated_from, made.id);
    assert.ok('last_used_at' in old);
    assert.ok(!r.stdout.includes('lgw_'), 'no secret in the listing');
    for (const bad of [
      ['keys', 'create', 'acme', '--role', 'read', '--rate-limit', 'lots'],
      ['keys', 'update', 'acme', rotated.id],
      ['keys', 'rotate', 'acme', made.id, '--overlap-seconds', '-1'],
    ]) {
      const b = await cli(...bad);
      assert.equal(b.code, 2, `${bad.join(' ')}: ${b.stderr}`);
    }
    const trail = ok(await cli('audit', 'acme')).events.map((e: any) => e.action);
    assert.ok(trail.includes('api_key.rotate') && trail.includes('api_key.update'), trail.join());
    ok(await cli('keys', 'revoke', 'acme', made.id));
    const refused = await cli('keys', 'rotate', 'acme', made.id);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /revoked/);
  });

  it('a key revoked or changed through the CLI stops or changes on a running gateway within AUTH_CACHE_SYNC_MS (issue 37)', async () => {
    const made = ok(await cli('keys', 'create', 'acme', '--role', 'write'));
    const api = new Api(h.gw!.url, { 'x-api-key': made.api_key, 'x-service-database': 'acme' });
    assert.equal((await api.get('/v1/namespace/%24/list')).status, 200); // the gateway has cached the lookup (5 minutes)
    ok(await cli('keys', 'update', 'acme', made.id, '--rate-limit', '1/60000'));
    await eventually(async () => (await api.get('/v1/namespace/%24/list')).status === 503, 40, 50);
    ok(await cli('keys', 'revoke', 'acme', made.id));
    await eventually(async () => (await api.get('/v1/namespace/%24/list')).status === 401, 40, 50);
  });

  it('keys create/update --grants: a scoped key, the same validation as the operator API, null resets (issue 34)', async () => {
    const grants = [{ privileges: ['select'], on: { namespace: ['prod', 'catalog'] } }];
    const made = ok(await cli('keys', 'create', 'acme', '--role', 'read', '--name', 'query-app', '--grants', JSON.stringify(grants)));
    assert.deepEqual(made.grants, grants);
    assert.deepEqual(ok(await cli('keys', 'list', 'acme')).api_keys.find((k: any) => k.id === made.id).grants, grants);

    // The running gateway applies them: the root namespace shows only the way to prod/catalog.
    const writerKey = ok(await cli('keys', 'create', 'acme', '--role', 'write')).api_key;
    const writer = new Api(h.gw!.url, { 'x-api-key': writerKey, 'x-service-database': 'acme' });
    for (const ns of ['prod', 'prod$catalog', 'prod$other'])
      assert.equal((await writer.post(`/v1/namespace/${ns}/create`, {})).status, 200, ns);
    const scoped = new Api(h.gw!.url, { 'x-api-key': made.api_key, 'x-service-database': 'acme' });
    assert.deepEqual((await scoped.get('/v1/namespace/%24/list')).body.namespaces, ['prod']);
    assert.deepEqual((await scoped.get('/v1/namespace/prod/list')).body.namespaces, ['catalog']);
    assert.equal((await scoped.post('/v1/namespace/prod$other/describe', {})).status, 404);

    const rotated = ok(await cli('keys', 'rotate', 'acme', made.id));
    assert.deepEqual(rotated.grants, grants, 'rotation keeps the grants');
    const narrowed = [{ privileges: ['describe'], on: { table: ['prod', 'catalog', 'items'] } }];
    assert.deepEqual(ok(await cli('keys', 'update', 'acme', rotated.id, '--grants', JSON.stringify(narrowed))).grants, narrowed);
    const reset = ok(await cli('keys', 'update', 'acme', rotated.id, '--grants', 'null'));
    assert.equal(reset.grants, null);
    assert.equal(ok(await cli('keys', 'create', 'acme', '--role', 'read')).grants, null, 'no --grants: none');

    // Not JSON, not a list of grants, or above the role: refused, nothing issued.
    const before = ok(await cli('keys', 'list', 'acme')).api_keys.length;
    const notJson = await cli('keys', 'create', 'acme', '--role', 'read', '--grants', '[{privileges:');
    assert.equal(notJson.code, 2, notJson.stderr);
    assert.match(notJson.stderr, /--grants takes a JSON list of grants/);
    assert.ok(!/\n\s+at /.test(notJson.stderr), 'a message, not a stack trace');
    const badShape = await cli('keys', 'create', 'acme', '--role', 'read', '--grants', '[{"privileges":["select"],"on":{"schema":["x"]}}]');
    assert.equal(badShape.code, 2, badShape.stderr);
    assert.match(badShape.stderr, /grants/);
    const empty = await cli('keys', 'update', 'acme', rotated.id, '--grants', '[]');
    assert.equal(empty.code, 2, empty.stderr);
    const above = await cli('keys', 'create', 'acme', '--role', 'read', '--grants', '[{"privileges":["insert"],"on":{"database":true}}]');
    assert.equal(above.code, 1, above.stderr);
    assert.match(above.stderr, /^error: .*role 'read' cannot be granted 'insert'/m);
    const adminOnTable = await cli(
      'keys',
      'create',
      'acme',
      '--role',
      'admin',
      '--grants',
      '[{"privileges":["admin"],"on":{"table":["t"]}}]',
    );
    assert.equal(adminOnTable.code, 1, adminOnTable.stderr);
    assert.match(adminOnTable.stderr, /'admin' is granted on the database only/);
    assert.equal(ok(await cli('keys', 'list', 'acme')).api_keys.length, before, 'nothing was issued');
    const trail = ok(await cli('audit', 'acme')).events as any[];
    const update = trail.find((e) => e.action === 'api_key.update' && e.details?.key_id === rotated.id && e.details?.changed?.grants);
    assert.ok(update, 'the grants change is audited');
  });
});
