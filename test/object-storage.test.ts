import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as lancedb from '@lancedb/lancedb';
import { loadConfig } from '../src/platform/config/config';
import { expectProblem } from './helpers/assertions';
import { eventually, forEachCatalog, newTenant, operator, startGateway, Tenant, TestGateway } from './helpers/gateway';
import {
  closeServer,
  containErrors,
  containServerErrors,
  freshPrefix,
  LocalS3,
  s3Options,
  TEST_BUCKET,
  TEST_BUCKET_2,
  useLocalS3,
} from './helpers/s3';
import { TableStorage } from '../src/engine/storage/table-storage.service';
import S3rver = require('s3rver');

import { stsProfile, StsStub } from './helpers/sts-stub';

/**
 * Tables on an object store (docs/object-storage.md): a local S3-compatible server (s3rver) and Lance's own S3
 * code path — objects appear and disappear in the bucket, nothing is written under the local data folder, storage
 * profiles place databases in other buckets, and namespace-mode clients get the options (static or STS) they need.
 */
const rows = (from: number, n: number) =>
  Array.from({ length: n }, (_, i) => ({ id: from + i, label: `r${from + i}`, vector: [from + i, 1, 2] }));

/** Every file under a folder, relative to it (nothing there → []). */
function localFiles(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return (fs.readdirSync(dir, { recursive: true }) as string[]).filter((f) => fs.statSync(path.join(dir, f)).isFile());
}

forEachCatalog('object storage: tables on S3', (kind) => {
  let s3: LocalS3;
  let sts: StsStub;
  let gw: TestGateway;
  let t: Tenant;
  let prefix: string;
  const euPrefix = freshPrefix();

  before(async () => {
    s3 = await useLocalS3();
    sts = await StsStub.start();
    prefix = freshPrefix();
    gw = await startGateway(kind, {
      STORAGE_PROFILES: JSON.stringify({
        default: { root: `s3://${TEST_BUCKET}/${prefix}`, options: s3.options, client_options: s3.options },
        eu: {
          root: `s3://${TEST_BUCKET_2}/${euPrefix}`,
          options: s3.options,
          client_options: { ...s3.options, aws_region: 'eu-west-1' },
          vend: false,
        },
        sts: stsProfile(`s3://${TEST_BUCKET}/${prefix}-sts`, s3, sts),
        quiet: { root: `s3://${TEST_BUCKET}/${prefix}-quiet`, options: s3.options },
      }),
    });
    t = await newTenant(gw);
  });
  after(async () => {
    await gw?.close();
    await sts?.close();
    await s3?.release();
  });

  it('create, insert, drop and database delete make and remove objects in the bucket, and nothing under the data folder', async () => {
    const name = (await newTenant(gw)).name;
    const keys = await operator(gw).post(`/admin/v1/databases/${name}/api-keys`, { role: 'write' });
    const remote = await lancedb.connect(`db://${name}`, { apiKey: keys.body.api_key, hostOverride: gw.url });
    const table = await remote.createTable('events', rows(0, 20));
    const afterCreate = await s3.keys(`${prefix}/${name}/`);
    assert.ok(
      afterCreate.some((k) => /\.lance\/_versions\/\d+\.manifest$/.test(k)),
      afterCreate.join('\n'),
    );
    assert.ok(afterCreate.some((k) => /\.lance\/data\//.test(k)));
    await table.add(rows(20, 5));
    assert.equal(await table.countRows(), 25);
    const afterInsert = await s3.keys(`${prefix}/${name}/`);
    assert.ok(afterInsert.length > afterCreate.length, 'the insert wrote new objects');

    await remote.createTable('kept', rows(0, 3));
    await remote.dropTable('events');
    const tableFolder = afterCreate[0].split('/').slice(0, 3).join('/');
    await eventually(async () => (await s3.keys(`${tableFolder}/`)).length === 0);
    assert.ok((await s3.keys(`${prefix}/${name}/`)).length > 0, "the other table's objects stay");

    assert.equal((await operator(gw).delete(`/admin/v1/databases/${name}`)).status, 204);
    await eventually(async () => (await s3.keys(`${prefix}/${name}/`)).length === 0);
    remote.close();

    // Tables never touch the local data folder: only the catalog (embedded) and the first-start key file live there.
    assert.deepEqual(localFiles(path.join(gw.dataDir, 'tables')), []);
    const outsideCatalog = localFiles(gw.dataDir).filter((f) => !f.startsWith(`catalog${path.sep}`) && f !== 'initial-api-key.json');
    assert.deepEqual(outsideCatalog, []);
  });

  it('a namespace-mode client given no storage options of its own creates, appends, queries and reopens a table', async () => {
    const headers = { 'x-api-key': t.writeKey, 'x-service-database': t.name };
    const ns = await lancedb.connectNamespace('rest', { uri: gw.url, headers });
    await ns.createNamespace(['app']);
    const table = await ns.createTable('items', rows(0, 10), ['app']);
    await table.add(rows(10, 5));
    assert.equal(await table.countRows(), 15);
    table.close();
    ns.close();

    const again = await lancedb.connectNamespace('rest', { uri: gw.url, headers });
    const reopened = await again.openTable('items', ['app']);
    assert.equal(await reopened.countRows(), 15);
    const near = await reopened.search([3, 1, 2]).limit(1).toArray();
    assert.equal(near[0].id, 3);
    reopened.close();
    again.close();

    const described = await t.api.post('/v1/table/app$items/describe', {});
    assert.equal(described.status, 200);
    assert.match(described.body.location, new RegExp(`^s3://${TEST_BUCKET}/${prefix}/${t.name}/[0-9a-f-]+\\.lance$`));
    assert.deepEqual(described.body.storage_options, s3.options, 'static vending hands out the client options');
    assert.ok((await s3.keys(`${described.body.location.slice(`s3://${TEST_BUCKET}/`.length)}/`)).length > 0);
  });

  it('vend_credentials false, a profile with vend false, and a profile with no client options answer no storage_options', async () => {
    await t.api.post('/v1/namespace/v/create', {});
    const declared = await t.api.post('/v1/table/v$one/declare', { vend_credentials: false });
    assert.equal(declared.status, 200);
    assert.equal(declared.body.storage_options, undefined);
    const described = await t.api.post('/v1/table/v$one/describe', { vend_credentials: false });
    assert.equal(described.body.storage_options, undefined);
    assert.ok((await t.api.post('/v1/table/v$one/describe', {})).body.storage_options, 'vended when not refused');

    for (const profile of ['eu', 'quiet']) {
      const name = `vend_${profile}_${kind}`;
      assert.equal((await operator(gw).post('/admin/v1/databases', { name, storage_profile: profile })).status, 201);
      const key = (await operator(gw).post(`/admin/v1/databases/${name}/api-keys`, { role: 'write' })).body.api_key;
      const api = t.api.with({ 'x-api-key': key, 'x-service-database': name });
      const d = await api.post('/v1/table/x/declare', {});
      assert.equal(d.status, 200, d.text);
      assert.equal(d.body.storage_options, undefined, `profile ${profile}`);
      assert.equal((await api.post('/v1/table/x/describe', {})).body.storage_options, undefined);
    }
  });

  it('a database on another profile keeps its tables in that bucket; the operator sees profile and root, never options', async () => {
    const name = `eu_${kind}`;
    const made = await operator(gw).post('/admin/v1/databases', { name, storage_profile: 'eu' });
    assert.equal(made.status, 201, made.text);
    assert.equal(made.body.storage_profile, 'eu');
    assert.equal(made.body.storage_root, `s3://${TEST_BUCKET_2}/${euPrefix}/${name}`);
    const key = (await operator(gw).post(`/admin/v1/databases/${name}/api-keys`, { role: 'write' })).body.api_key;
    const remote = await lancedb.connect(`db://${name}`, { apiKey: key, hostOverride: gw.url });
    const table = await remote.createTable('eu_rows', rows(0, 4));
    assert.equal(await table.countRows(), 4);
    assert.ok((await s3.keys(`${euPrefix}/${name}/`, TEST_BUCKET_2)).length > 0, 'objects in the eu bucket');
    assert.deepEqual(await s3.keys(`${prefix}/${name}/`), [], 'none in the default bucket');

    const listed = await operator(gw).get('/admin/v1/databases');
    const shown = listed.body.databases.find((d: { name: string }) => d.name === name);
    assert.equal(shown.storage_profile, 'eu');
    for (const text of [listed.text, made.text, (await operator(gw).get(`/admin/v1/databases/${name}`)).text]) {
      assert.ok(!/aws_secret_access_key|aws_access_key_id|S3RVER/.test(text), 'no option names or values in operator answers');
    }

    // The profile cannot change while the database holds tables; an unknown profile is a 400.
    expectProblem(await operator(gw).request('PATCH', `/admin/v1/databases/${name}`, { storage_profile: 'default' }), 409, 14, {
      msg: 'holds tables',
    });
    expectProblem(await operator(gw).post('/admin/v1/databases', { name: `nope_${kind}`, storage_profile: 'mars' }), 400, 13, {
      msg: "unknown storage profile 'mars'",
    });
    await remote.dropTable('eu_rows');
    remote.close();
    const moved = await operator(gw).request('PATCH', `/admin/v1/databases/${name}`, { storage_profile: 'default' });
    assert.equal(moved.status, 200, moved.text);
    assert.equal(moved.body.storage_root, `s3://${TEST_BUCKET}/${prefix}/${name}`);
  });

  it('temporary vending: STS credentials limited to the table (read-only for read keys), cached, with expires_at_millis', async () => {
    const name = `sts_${kind}`;
    assert.equal((await operator(gw).post('/admin/v1/databases', { name, storage_profile: 'sts' })).status, 201);
    const w = (await operator(gw).post(`/admin/v1/databases/${name}/api-keys`, { role: 'write' })).body.api_key;
    const r = (await operator(gw).post(`/admin/v1/databases/${name}/api-keys`, { role: 'read' })).body.api_key;
    const writer = t.api.with({ 'x-api-key': w, 'x-service-database': name });
    const reader = t.api.with({ 'x-api-key': r, 'x-service-database': name });
    const before = sts.requests.length;
    const declared = await writer.post('/v1/table/vended/declare', {});
    assert.equal(declared.status, 200, declared.text);
    const so = declared.body.storage_options;
    assert.ok(so.aws_session_token && so.aws_access_key_id && so.aws_secret_access_key, JSON.stringify(Object.keys(so)));
    assert.ok(Number(so.expires_at_millis) > Date.now());
    assert.equal(so.aws_endpoint, s3.endpoint, 'the client options come along');
    assert.notEqual(so.aws_access_key_id, s3.options.aws_access_key_id, "never the server's own key");

    const key = declared.body.location.slice(`s3://${TEST_BUCKET}/`.length);
    assert.equal(sts.requests.length, before + 1);
    const policy = sts.policy(sts.requests.length - 1) as unknown as {
      Statement: Array<{ Action: string | string[]; Resource: string | string[] }>;
    };
    const resources = policy.Statement.flatMap((s) => [s.Resource].flat());
    assert.ok(resources.includes(`arn:aws:s3:::${TEST_BUCKET}/${key}/*`), JSON.stringify(resources));
    assert.ok(
      resources.every((res) => res === `arn:aws:s3:::${TEST_BUCKET}` || res.startsWith(`arn:aws:s3:::${TEST_BUCKET}/${key}`)),
      'nothing outside the table',
    );
    assert.ok(policy.Statement.flatMap((s) => [s.Action].flat()).includes('s3:PutObject'));

    // Cached: the writer's describe reuses the credential; a read key gets its own, read-only one.
    assert.equal((await writer.post('/v1/table/vended/describe', {})).body.storage_options.aws_session_token, so.aws_session_token);
    assert.equal(sts.requests.length, before + 1);
    const read = await reader.post('/v1/table/vended/describe', {});
    assert.ok(read.body.storage_options.aws_session_token);
    assert.equal(sts.requests.length, before + 2);
    const readActions = (
      sts.policy(sts.requests.length - 1) as unknown as { Statement: Array<{ Action: string | string[] }> }
    ).Statement.flatMap((s) => [s.Action].flat());
    assert.ok(!readActions.includes('s3:PutObject') && !readActions.includes('s3:DeleteObject'), readActions.join(','));
  });

  it("register accepts only locations inside the database's own folder of its own profile", async () => {
    const other = await newTenant(gw);
    const write = async (db: string, name: string) => {
      const conn = await lancedb.connect(`s3://${TEST_BUCKET}/${prefix}/${db}/imports`, { storageOptions: s3.options });
      (await conn.createTable(name, rows(0, 2))).close();
      conn.close();
    };
    await write(t.name, 'mine');
    await write(other.name, 'theirs');
    const reg = (location: string) => t.api.post(`/v1/table/reg_${Math.random().toString(36).slice(2, 8)}/register`, { location });
    const ok = await reg('imports/mine.lance');
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.location, 'imports/mine.lance');
    const asUri = await reg(`s3://${TEST_BUCKET}/${prefix}/${t.name}/imports/mine.lance`);
    assert.equal(asUri.status, 409, 'the same data is already registered (a URI inside the folder is accepted as that location)');
    expectProblem(await reg(`s3://${TEST_BUCKET}/${prefix}/${other.name}/imports/theirs.lance`), 400, 13, { msg: 'Absolute URIs' });
    expectProblem(await reg(`s3://${TEST_BUCKET_2}/${euPrefix}/x.lance`), 400, 13, { msg: 'Absolute URIs' });
    expectProblem(await reg(`../${other.name}/imports/theirs.lance`), 400, 13, { msg: 'Path traversal' });
  });
});

describe('object storage: readiness and configuration', () => {
  let s3: LocalS3;
  before(async () => {
    s3 = await useLocalS3();
  });
  after(async () => {
    await s3?.release();
  });

  it('/readyz answers 503 naming the profile while its bucket cannot be reached, and no secret', async () => {
    const gw = await startGateway('embedded', {
      STORAGE_ROOT: 's3://no-such-bucket/x',
      STORAGE_OPTIONS: JSON.stringify({ ...s3.options, aws_secret_access_key: 'very-secret-value-123' }),
    });
    try {
      const r = await fetch(`${gw.url}/readyz`);
      const text = await r.text();
      assert.equal(r.status, 503, text);
      assert.match(text, /table storage unavailable: profile 'default'/);
      assert.ok(!text.includes('very-secret-value-123'));
    } finally {
      await gw.close();
    }
    const good = await startGateway('embedded', {
      STORAGE_ROOT: `s3://${TEST_BUCKET}/${freshPrefix()}`,
      STORAGE_OPTIONS: JSON.stringify(s3.options),
    });
    try {
      const r = await fetch(`${good.url}/readyz`);
      assert.equal(r.status, 200);
      assert.equal(((await r.json()) as { storage: string }).storage, 'up');
    } finally {
      await good.close();
    }
  });

  it('start-up warns about a store that ignores conditional creates (Lance commits rely on them), and not about one that honours them', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lgw-plain-s3-'));
    const plain = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: dir, configureBuckets: [{ name: 'plain' }] });
    containErrors(plain);
    const { port } = await plain.run(); // s3rver as shipped: ignores If-None-Match on PUT
    containServerErrors(plain);
    const run = async (env: Record<string, string>) => {
      const gw = await startGateway('embedded', env);
      try {
        const storage = gw.app.get(TableStorage);
        return await eventually(
          async () => storage.conditionalCreates.has('default') && { honoured: storage.conditionalCreates.get('default') },
        );
      } finally {
        await gw.close();
      }
    };
    try {
      const bad = await run({ STORAGE_ROOT: 's3://plain/x', STORAGE_OPTIONS: JSON.stringify(s3Options(`http://127.0.0.1:${port}`)) });
      assert.deepEqual(bad, { honoured: false }, 'found out (and warned about at start-up)');
      const good = await run({ STORAGE_ROOT: `s3://${TEST_BUCKET}/${freshPrefix()}`, STORAGE_OPTIONS: JSON.stringify(s3.options) });
      assert.deepEqual(good, { honoured: true });
    } finally {
      await closeServer(plain);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('start-up refuses bad storage configuration with a clear message and no option values', () => {
    const bad = (env: Record<string, string>, msg: RegExp) => {
      assert.throws(
        () => loadConfig({ DATA_DIR: '/tmp/x', ...env }),
        (err: Error) => {
          assert.match(err.message, msg);
          assert.ok(!err.message.includes('hunter2'), 'no option value in the message');
          return true;
        },
      );
    };
    bad({ STORAGE_ROOT: 'ftp://host/x' }, /STORAGE_ROOT: unknown scheme 'ftp:\/\/'/);
    bad({ STORAGE_ROOT: 's3://' }, /needs a bucket name/);
    bad({ STORAGE_OPTIONS: '{"aws_secret_access_key": "hunter2"' }, /STORAGE_OPTIONS: not valid JSON/);
    bad({ STORAGE_OPTIONS: '["hunter2"]' }, /STORAGE_OPTIONS: must be a JSON object/);
    bad({ STORAGE_PROFILES: '{"eu": {"options": {"k": "hunter2"}}}' }, /STORAGE_PROFILES\.eu\.root: required/);
    bad({ STORAGE_PROFILES: '{"bad name": {"root": "s3://b"}}' }, /profile name 'bad name'/);
    bad(
      { STORAGE_PROFILES: '{"gcs": {"root": "gs://bkt", "role_arn": "arn:aws:iam::123456789012:role/r"}}' },
      /only available for s3:\/\//,
    );
    bad({ STORAGE_ROOT: 's3://b', STORAGE_PROFILES: '{"default": {"root": "s3://c"}}' }, /not both/);
    const ok = loadConfig({
      DATA_DIR: '/tmp/x',
      STORAGE_ROOT: 's3://bucket/a/b/',
      STORAGE_OPTIONS: '{"aws_region": "eu-west-1", "allow_http": true}',
    });
    const p = ok.storage.profiles.get('default')!;
    assert.deepEqual(
      { root: p.root, bucket: p.bucket, prefix: p.prefix, options: p.options },
      {
        root: 's3://bucket/a/b',
        bucket: 'bucket',
        prefix: 'a/b',
        options: { aws_region: 'eu-west-1', allow_http: 'true' },
      },
    );
    assert.equal(loadConfig({ DATA_DIR: '/tmp/x', STORAGE_ROOT: 'gs://gbucket/p' }).storage.profiles.get('default')!.scheme, 'gs');
    assert.equal(loadConfig({ DATA_DIR: '/tmp/x' }).storageRoot, '/tmp/x/tables');
  });
});

describe('object storage: crash clean-up on the bucket [postgres]', () => {
  let s3: LocalS3;
  let gw: TestGateway;
  before(async () => {
    s3 = await useLocalS3();
  });
  after(async () => {
    await gw?.close();
    await s3?.release();
  });

  it("the reclaimer removes a dead writer's objects from the bucket (recorded as pending), and leaves registered tables alone", async () => {
    const prefix = freshPrefix();
    gw = await startGateway('postgres', {
      STORAGE_ROOT: `s3://${TEST_BUCKET}/${prefix}`,
      STORAGE_OPTIONS: JSON.stringify(s3.options),
      RECLAIM_AFTER_SECONDS: '1',
      RECLAIM_INTERVAL_SECONDS: '1',
    });
    const t = await newTenant(gw);
    const remote = await lancedb.connect(`db://${t.name}`, { apiKey: t.writeKey, hostOverride: gw.url });
    (await remote.createTable('kept', rows(0, 3))).close();
    // What a replica killed mid-upload leaves: objects at a fresh location, and its pending record with an old heartbeat.
    const conn = await lancedb.connect(`s3://${TEST_BUCKET}/${prefix}/${t.name}`, { storageOptions: s3.options });
    (await conn.createTable('dead-writer', rows(0, 5))).close();
    conn.close();
    assert.ok((await s3.keys(`${prefix}/${t.name}/dead-writer.lance/`)).length > 0);
    const pg = new (await import('pg')).Client({ connectionString: gw.config.databaseUrl });
    await pg.connect();
    try {
      await pg.query(
        `INSERT INTO pending_locations (id, database_id, database_name, location, kind, owner, started_at, heartbeat_at)
         SELECT gen_random_uuid(), id, name, $2, 'write', 'dead-replica', now() - interval '1 hour', now() - interval '1 hour'
         FROM databases WHERE name = $1`,
        [t.name, `${t.name}/dead-writer.lance`],
      );
    } finally {
      await pg.end();
    }
    await eventually(async () => (await s3.keys(`${prefix}/${t.name}/dead-writer.lance/`)).length === 0, 200, 100);
    const table = await remote.openTable('kept');
    assert.equal(await table.countRows(), 3, 'the registered table is untouched');
    remote.close();
  });
});
