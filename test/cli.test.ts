import assert from 'node:assert/strict';
import * as os from 'node:os';
import { describe, it } from 'node:test';
import { Api, eventually, startGateway } from './helpers/gateway';
import { useCli } from './helpers/cli';

/** The operator CLI (issue 3): the operator API's actions against the catalog, without the server running. */

describe('operator CLI (Postgres catalog)', () => {
  const h = useCli('lgw_cli');
  const { cli, ok } = h;
  const user = os.userInfo().username;

  let writeKey: string;
  let writeKeyId: string;

  it('creates a database with properties and issues a key, with no server running', async () => {
    const created = ok(await cli('databases', 'create', 'acme', '--property', 'plan=gold', '--property', 'region=eu=west'));
    assert.equal(created.name, 'acme');
    assert.deepEqual(created.properties, { plan: 'gold', region: 'eu=west' });
    assert.match(created.id, /^[0-9a-f-]{36}$/);

    const again = await cli('databases', 'create', 'acme');
    assert.equal(again.code, 1);
    assert.match(again.stderr, /^error: .*acme.*already exists/m);

    const issued = ok(await cli('keys', 'issue', 'acme', '--role', 'write', '--description', 'ingest job'));
    assert.match(issued.api_key, /^lgw_[A-Za-z0-9_-]{43}$/);
    assert.equal(issued.role, 'write');
    assert.equal(issued.description, 'ingest job');
    assert.equal(issued.expires_at, null);
    writeKey = issued.api_key;
    writeKeyId = issued.id;

    const got = ok(await cli('databases', 'get', 'acme'));
    assert.equal(got.id, created.id);
    assert.equal(got.properties.plan, 'gold');
    const listed = ok(await cli('databases', 'list'));
    assert.deepEqual(
      listed.databases.map((d: any) => d.name),
      ['acme'],
    );
  });

  it('a gateway on the same catalog accepts the issued key', async () => {
    h.gw = await startGateway('postgres', { DATABASE_URL: h.db.url });
    const api = new Api(h.gw!.url, { 'x-api-key': writeKey, 'x-service-database': 'acme' });
    assert.equal((await api.post('/v1/namespace/from_cli_key/create', {})).status, 200);
    assert.deepEqual((await api.get('/v1/namespace/%24/list')).body.namespaces, ['from_cli_key']);
  });

  it('keys list never prints the secret', async () => {
    const r = await cli('keys', 'list', 'acme');
    const listed = ok(r);
    assert.deepEqual(
      listed.api_keys.map((k: any) => k.id),
      [writeKeyId],
    );
    assert.equal(listed.api_keys[0].role, 'write');
    assert.equal(listed.api_keys[0].revoked_at, null);
    assert.ok(!r.stdout.includes(writeKey) && !r.stdout.includes('lgw_'), 'no secret in the listing');
    assert.ok(!r.stderr.includes(writeKey));
  });

  it('keys issue with an expiry; a past one is refused', async () => {
    const future = ok(await cli('keys', 'issue', 'acme', '--role', 'read', '--expires-at', '2999-01-01T00:00:00Z'));
    assert.equal(future.expires_at, '2999-01-01T00:00:00.000Z');
    const past = await cli('keys', 'issue', 'acme', '--role', 'read', '--expires-at', '2001-01-01T00:00:00Z');
    assert.equal(past.code, 1, past.stderr);
    assert.match(past.stderr, /^error: .*expires_at/m);
    const bad = await cli('keys', 'issue', 'acme', '--role', 'read', '--expires-at', 'soon');
    assert.equal(bad.code, 2, bad.stderr);
    assert.equal(ok(await cli('keys', 'list', 'acme')).api_keys.length, 2);
  });

  it('keys revoke stops the running gateway from accepting the key', async () => {
    const api = new Api(h.gw!.url, { 'x-api-key': writeKey, 'x-service-database': 'acme' });
    assert.equal((await api.get('/v1/namespace/%24/list')).status, 200);
    const revoked = ok(await cli('keys', 'revoke', 'acme', writeKeyId));
    assert.equal(revoked.revoked, writeKeyId);
    const rejected = await eventually(async () => {
      const r = await api.get('/v1/namespace/%24/list');
      return r.status === 401 ? r : undefined;
    });
    assert.equal(rejected.body.code, 16);
    const k = ok(await cli('keys', 'list', 'acme')).api_keys.find((x: any) => x.id === writeKeyId);
    assert.ok(k.revoked_at && !Number.isNaN(Date.parse(k.revoked_at)));
    const twice = await cli('keys', 'revoke', 'acme', writeKeyId);
    assert.equal(twice.code, 1);
    assert.match(twice.stderr, /^error: .*not found/m);
  });

  it('audit lists the actions, with actor cli:<user> for the CLI and key:<id> for the gateway', async () => {
    const events = ok(await cli('audit', 'acme')).events as any[];
    const actions = events.map((e) => [e.action, e.actor]);
    assert.deepEqual(
      actions.filter(([, actor]) => actor === `cli:${user}`).map(([a]) => a),
      [
        'api_key.revoke',
        'api_key.issue', // the 2999 read key
        'api_key.issue', // the write key
        'database.create',
      ],
    );
    const revoke = events.find((e) => e.action === 'api_key.revoke');
    assert.equal(revoke.target, writeKeyId);
    const byKey = events.find((e) => e.action === 'namespace.create');
    assert.equal(byKey.actor, `key:${writeKeyId}`);
    assert.equal(byKey.target, 'from_cli_key');
    assert.equal(events.at(-1).action, 'database.create');
    const limited = ok(await cli('audit', 'acme', '--limit', '2'));
    assert.equal(limited.events.length, 2);
    assert.deepEqual(
      limited.events.map((e: any) => e.id),
      events.slice(0, 2).map((e) => e.id),
    );
    // The API's filters: --action (exact or a prefix ending in '.'), --actor, --target, combined.
    const issues = ok(await cli('audit', 'acme', '--action', 'api_key.issue', '--actor', `cli:${user}`)).events as any[];
    assert.deepEqual(
      issues.map((e) => e.id),
      events.filter((e) => e.action === 'api_key.issue' && e.actor === `cli:${user}`).map((e) => e.id),
    );
    assert.equal(issues.length, 2);
    const keyActions = ok(await cli('audit', 'acme', '--action', 'api_key.', '--target', writeKeyId)).events as any[];
    assert.deepEqual(
      keyActions.map((e) => e.action),
      ['api_key.revoke'],
    );
    const bad = await cli('audit', 'acme', '--action', 'Not An Action');
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, /action: must be an action/);
  });

  it('databases create --storage-profile places a database in a profile; get shows profile and root, never options', async () => {
    const profiles = JSON.stringify({ eu: { root: '/tmp/lgw-cli-eu-root', options: { aws_secret_access_key: 'cli-secret-value' } } });
    const withProfiles = async (...args: string[]) => {
      const saved = process.env.STORAGE_PROFILES;
      process.env.STORAGE_PROFILES = profiles;
      try {
        return await cli(...args);
      } finally {
        if (saved === undefined) delete process.env.STORAGE_PROFILES;
        else process.env.STORAGE_PROFILES = saved;
      }
    };
    const made = await withProfiles('databases', 'create', 'euco', '--storage-profile', 'eu');
    const created = ok(made);
    assert.equal(created.storage_profile, 'eu');
    assert.equal(created.storage_root, '/tmp/lgw-cli-eu-root/euco');
    const got = await withProfiles('databases', 'get', 'euco');
    assert.equal(ok(got).storage_profile, 'eu');
    assert.ok(!got.stdout.includes('cli-secret-value') && !made.stdout.includes('cli-secret-value'));
    const unknown = await withProfiles('databases', 'create', 'marsco', '--storage-profile', 'mars');
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /unknown storage profile 'mars'/);
    assert.equal(ok(await cli('databases', 'get', 'acme')).storage_profile, 'default');
    ok(await withProfiles('databases', 'delete', 'euco')); // the later tests count databases
  });

  it('databases create --managed-versioning makes a database whose table versions the catalog manages', async () => {
    const made = ok(await cli('databases', 'create', 'mvco', '--managed-versioning'));
    assert.equal(made.managed_versioning, true);
    assert.equal(ok(await cli('databases', 'get', 'mvco')).managed_versioning, true);
    assert.equal(ok(await cli('databases', 'get', 'acme')).managed_versioning, false);
    ok(await cli('databases', 'delete', 'mvco')); // the later tests count databases
  });

  it('databases create/update set and clear network rules (--allowed-cidrs, --private-only)', async () => {
    const made = ok(await cli('databases', 'create', 'netco', '--allowed-cidrs', '10.1.2.3/8, 2001:db8::/32'));
    assert.deepEqual(made.network_rules, { allowed_cidrs: ['10.0.0.0/8', '2001:db8::/32'], private_only: false });
    const bad = await cli('databases', 'update', 'netco', '--allowed-cidrs', '10.0.0.0/33');
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, /--allowed-cidrs: '10\.0\.0\.0\/33' is not/);
    // No PRIVATE_HOST_SUFFIXES here: a private-only database could not be reached.
    const priv = await cli('databases', 'update', 'netco', '--private-only', 'true');
    assert.equal(priv.code, 1, priv.stderr);
    assert.match(priv.stderr, /PRIVATE_HOST_SUFFIXES/);
    const cleared = ok(await cli('databases', 'update', 'netco', '--allowed-cidrs', 'any'));
    assert.deepEqual(cleared.network_rules, { allowed_cidrs: [], private_only: false });
    const actions = (ok(await cli('audit', 'netco')).events as any[]).map((e) => e.action);
    assert.deepEqual(actions, ['database.update', 'database.create']);
    ok(await cli('databases', 'delete', 'netco')); // the later tests count databases
  });

  it('a bad command exits 2 with the usage on stderr', async () => {
    for (const args of [
      [],
      ['frobnicate'],
      ['databases'],
      ['databases', 'explode'],
      ['keys', 'issue', 'acme'],
      ['keys', 'issue', 'acme', '--role', 'root'],
      ['keys', 'revoke', 'acme'],
      ['audit'],
      ['databases', 'create', 'x', '--property', 'noequals'],
    ]) {
      const r = await cli(...args);
      assert.equal(r.code, 2, `${args.join(' ')}: exit ${r.code} ${r.stderr}`);
      assert.match(r.stderr, /usage: /, args.join(' '));
      assert.equal(r.stdout, '', args.join(' '));
    }
    assert.equal(ok(await cli('databases', 'list')).databases.length, 1, 'nothing was created');
  });

  // Regression: an unknown option is a usage error (exit 2 with the usage), not a stack trace.
  it('an unknown option exits 2 with the usage', async () => {
    const r = await cli('databases', 'list', '--bogus');
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /usage: /);
  });

  it('databases get of an unknown database exits 1 with an error message', async () => {
    const r = await cli('databases', 'get', 'nope');
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^error: .*nope.*not found/m);
    assert.ok(!/\n\s+at /.test(r.stderr), 'a message, not a stack trace');
    assert.equal(r.stdout, '');
    const keys = await cli('keys', 'list', 'nope');
    assert.equal(keys.code, 1);
    assert.match(keys.stderr, /nope/);
  });

  it('databases delete removes the database, its keys and its access', async () => {
    const issued = ok(await cli('keys', 'issue', 'acme', '--role', 'read'));
    const api = new Api(h.gw!.url, { 'x-api-key': issued.api_key, 'x-service-database': 'acme' });
    assert.equal((await api.get('/v1/namespace/%24/list')).status, 200);
    assert.deepEqual(ok(await cli('databases', 'delete', 'acme')), { deleted: 'acme' });
    const gone = await cli('databases', 'get', 'acme');
    assert.equal(gone.code, 1);
    assert.deepEqual(ok(await cli('databases', 'list')).databases, []);
    await eventually(async () => (await api.get('/v1/namespace/%24/list')).status === 401);
    const again = await cli('databases', 'delete', 'acme');
    assert.equal(again.code, 1);
    assert.match(again.stderr, /acme/);
  });
});
