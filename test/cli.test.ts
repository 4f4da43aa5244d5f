import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { program } from './helpers/root';
import { Api, createPgDatabase, eventually, startGateway, TestGateway } from './helpers/gateway';

/** The operator CLI (issue 3): the operator API's actions against the catalog, without the server running. */

const CLI = program(path.resolve(__dirname, '../src/cli/admin.js'));

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  json: any;
}

describe('operator CLI (Postgres catalog)', () => {
  let db: Awaited<ReturnType<typeof createPgDatabase>>;
  let dataDir: string;
  let gw: TestGateway | undefined;
  const user = os.userInfo().username;

  function cli(...args: string[]): Promise<CliResult> {
    const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: db.url, DATA_DIR: dataDir, NODE_NO_WARNINGS: '1' };
    delete env.ADMIN_API_KEY;
    delete env.BOOTSTRAP_DATABASE;
    return new Promise((resolve) => {
      execFile(process.execPath, [CLI, ...args], { env, timeout: 60_000 }, (err, stdout, stderr) => {
        const code = err ? (typeof (err as any).code === 'number' ? (err as any).code : -1) : 0;
        let json: unknown;
        try {
          json = JSON.parse(stdout);
        } catch {
          json = undefined;
        }
        resolve({ code, stdout, stderr, json });
      });
    });
  }

  const ok = (r: CliResult) => {
    assert.equal(r.code, 0, `exit ${r.code}: ${r.stderr}`);
    assert.ok(r.json !== undefined, `stdout is JSON: ${r.stdout}`);
    return r.json;
  };

  before(async () => {
    assert.ok(fs.existsSync(CLI), `${CLI} is built`);
    db = await createPgDatabase('lgw_cli');
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'lgw-cli-'));
  });
  after(async () => {
    await gw?.close();
    await db?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

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
    gw = await startGateway('postgres', { DATABASE_URL: db.url });
    const api = new Api(gw.url, { 'x-api-key': writeKey, 'x-service-database': 'acme' });
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
    const api = new Api(gw!.url, { 'x-api-key': writeKey, 'x-service-database': 'acme' });
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

  it('keys create/update --grants: a scoped key, the same validation as the operator API, null resets (issue 34)', async () => {
    const grants = [{ privileges: ['select'], on: { namespace: ['prod', 'catalog'] } }];
    const made = ok(await cli('keys', 'create', 'acme', '--role', 'read', '--name', 'query-app', '--grants', JSON.stringify(grants)));
    assert.deepEqual(made.grants, grants);
    assert.deepEqual(ok(await cli('keys', 'list', 'acme')).api_keys.find((k: any) => k.id === made.id).grants, grants);

    // The running gateway applies them: the root namespace shows only the way to prod/catalog.
    const writerKey = ok(await cli('keys', 'create', 'acme', '--role', 'write')).api_key;
    const writer = new Api(gw!.url, { 'x-api-key': writerKey, 'x-service-database': 'acme' });
    for (const ns of ['prod', 'prod$catalog', 'prod$other'])
      assert.equal((await writer.post(`/v1/namespace/${ns}/create`, {})).status, 200, ns);
    const scoped = new Api(gw!.url, { 'x-api-key': made.api_key, 'x-service-database': 'acme' });
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

  it('databases delete removes the database, its keys and its access', async () => {
    const issued = ok(await cli('keys', 'issue', 'acme', '--role', 'read'));
    const api = new Api(gw!.url, { 'x-api-key': issued.api_key, 'x-service-database': 'acme' });
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
