import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import * as http from 'node:http';
import * as lancedb from '@lancedb/lancedb';
import * as arrow from 'apache-arrow';
import { eventually } from './helpers/gateway';
import { freePort } from './helpers/redis';
import { program, ROOT } from './helpers/root';

const MAIN = program(path.resolve(__dirname, '../src/main.js'));
const START = path.join(ROOT, 'scripts/start.sh');

describe('npm start on the embedded default (the built entry point, as a separate process)', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'lgw-start-'));
  after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it('starts with no configuration, bootstraps a database and key, serves the official client, and exits on SIGTERM', async () => {
    const port = await freePort();
    const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), DATA_DIR: dataDir, NODE_NO_WARNINGS: '1' };
    for (const k of ['DATABASE_URL', 'ADMIN_API_KEY', 'BOOTSTRAP_DATABASE', 'BASE_PATH', 'STORAGE_ROOT']) delete env[k];
    // As `npm start` runs it after building: through the allocator script, which execs node (so SIGTERM reaches it).
    const child = spawn('sh', [START, MAIN], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    try {
      await eventually(async () => output.includes('listening on'), 600, 100);
      assert.match(output, new RegExp(`listening on http://127\\.0\\.0\\.1:${port}`));

      const file = path.join(dataDir, 'initial-api-key.json');
      const creds = JSON.parse(fs.readFileSync(file, 'utf8'));
      assert.equal(creds.database, 'default');
      assert.equal(fs.statSync(file).mode & 0o777, 0o600, 'only the owner can read the key file');
      assert.ok(!output.includes(creds.api_key), 'the secret is not in the log');
      assert.ok(fs.existsSync(path.join(dataDir, 'catalog')), 'embedded catalog under DATA_DIR');

      const db = await lancedb.connectNamespace('rest', {
        uri: `http://127.0.0.1:${port}`,
        headers: { 'x-api-key': creds.api_key, 'x-service-database': creds.database },
      });
      try {
        await db.createNamespace(['hello']);
        const t = await db.createTable('world', [{ id: 1, v: [1, 2] }], ['hello']);
        assert.equal(await t.countRows(), 1);
      } finally {
        db.close();
      }
      assert.ok(
        fs.readdirSync(path.join(dataDir, 'tables', 'default')).some((f) => f.endsWith('.lance')),
        'tables under DATA_DIR/tables/<database>',
      );
      // Log lines go out in batches, each at most 100 ms after its first line (src/platform/observability/logger.ts):
      // a quiet gateway's last request lines still arrive while it runs.
      await eventually(async () => output.includes('"route":"/v1/namespace/:id/create"'), 100, 50);
    } finally {
      child.kill('SIGTERM');
    }
    assert.equal(await exited, 0, `graceful exit on SIGTERM; output:\n${output}`);
    // The shutdown line, logged just before the exit, is not lost with a batch (the exit hook: test/unit/logger.test.ts).
    assert.match(output, /SIGTERM received: shutting down/);
  });

  it('on SIGTERM finishes a request in flight (a slow streamed upload) before exiting 0', async () => {
    const port = await freePort();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lgw-term-'));
    const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), DATA_DIR: dir, NODE_NO_WARNINGS: '1' };
    for (const k of ['DATABASE_URL', 'ADMIN_API_KEY', 'BOOTSTRAP_DATABASE', 'BASE_PATH', 'STORAGE_ROOT']) delete env[k];
    // As `npm start` runs it after building: through the allocator script, which execs node (so SIGTERM reaches it).
    const child = spawn('sh', [START, MAIN], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    try {
      await eventually(async () => output.includes('listening on'), 600, 100);
      const creds = JSON.parse(fs.readFileSync(path.join(dir, 'initial-api-key.json'), 'utf8'));
      const body = Buffer.from(arrow.tableToIPC(arrow.tableFromArrays({ id: Int32Array.from({ length: 5000 }, (_, i) => i) }), 'stream'));
      const answer = new Promise<{ status: number; text: string }>((resolve, reject) => {
        const req = http.request(
          {
            host: '127.0.0.1',
            port,
            method: 'POST',
            path: '/v1/tables/in_flight',
            headers: {
              'x-api-key': creds.api_key,
              'x-service-database': creds.database,
              'content-type': 'application/vnd.apache.arrow.stream',
              'content-length': String(body.length),
            },
          },
          (res) => {
            let text = '';
            res.on('data', (c) => (text += c));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
          },
        );
        req.on('error', reject);
        // Half the body, then SIGTERM, then the rest: the request is in flight when shutdown starts. The pause is
        // generous: on a loaded machine a shorter one can let SIGTERM come before the server has read the headers,
        // and a request that arrives after shutdown began is refused (503), as it should be.
        req.write(body.subarray(0, body.length >> 1));
        setTimeout(() => {
          child.kill('SIGTERM');
          setTimeout(() => req.end(body.subarray(body.length >> 1)), 300);
        }, 1500);
      });
      const res = await answer;
      assert.equal(res.status, 201, res.text);
      assert.equal(JSON.parse(res.text).num_rows, 5000);
      assert.equal(await exited, 0, `graceful exit; output:\n${output}`);
      assert.match(output, /SIGTERM received: shutting down/);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses to start with a malformed DATABASE_URL and says why', () => {
    const env = { ...process.env, DATABASE_URL: 'mysql://nope', DATA_DIR: dataDir, PORT: '0', NODE_NO_WARNINGS: '1' };
    const r = spawnSync(process.execPath, [MAIN], { env, encoding: 'utf8', timeout: 60_000 });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /Invalid configuration/);
    assert.match(r.stderr, /DATABASE_URL: must be a postgresql:\/\/ URL/);
  });

  it('names every wrong value at once', () => {
    const env = {
      ...process.env,
      PORT: 'eighty',
      LIST_DEFAULT_LIMIT: '-3',
      ADMIN_API_KEY: 'short',
      TENANT_HOST_SUFFIX: 'no-leading-dot.example.com',
      OAUTH_JWKS_URI: 'ftp://keys',
      NODE_NO_WARNINGS: '1',
    };
    const r = spawnSync(process.execPath, [MAIN], { env, encoding: 'utf8', timeout: 60_000 });
    assert.notEqual(r.status, 0);
    for (const name of ['PORT', 'LIST_DEFAULT_LIMIT', 'ADMIN_API_KEY', 'TENANT_HOST_SUFFIX', 'OAUTH_JWKS_URI']) {
      assert.match(r.stderr, new RegExp(`${name}:`));
    }
  });

  it('requires an issuer and an audience when bearer tokens are switched on', () => {
    const env: NodeJS.ProcessEnv = { ...process.env, OAUTH_JWKS_URI: 'https://auth.example/jwks.json', NODE_NO_WARNINGS: '1' };
    delete env.OAUTH_ISSUER;
    delete env.OAUTH_AUDIENCE;
    const r = spawnSync(process.execPath, [MAIN], { env, encoding: 'utf8', timeout: 60_000 });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /OAUTH_ISSUER: required when OAUTH_JWKS_URI is set/);
    assert.match(r.stderr, /OAUTH_AUDIENCE: required when OAUTH_JWKS_URI is set/);
  });
});
