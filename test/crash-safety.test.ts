import assert from 'node:assert/strict';
import { ChildProcess, execFile, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as lancedb from '@lancedb/lancedb';
import * as arrow from 'apache-arrow';
import { Client } from 'pg';
import { PrismaClient } from '../src/generated/prisma/client';
import { Reclaimer } from '../src/modules/reclaim/reclaimer.service';
import { StorageScan } from '../src/modules/reclaim/storage-scan.service';
import {
  ADMIN_KEY,
  Api,
  CATALOG_KINDS,
  createPgDatabase,
  eventually,
  forEachCatalog,
  newTenant,
  startGateway,
  TestGateway,
} from './helpers/gateway';
import { freePort } from './helpers/redis';
import { program } from './helpers/root';

/**
 * Crash safety (docs/resilience.md#crash-safety): gateways run as OS processes on one Postgres catalog and one
 * STORAGE_ROOT, as replicas do. A process is killed with SIGKILL in the middle of a streamed create, an in-place
 * overwrite and a database deletion; another process, started on the same catalog and storage with a small
 * RECLAIM_AFTER_SECONDS, must remove what they left, leave live tables alone and let the retried requests succeed.
 * Postgres only: a second process cannot share the embedded catalog, and the tests watch the catalog from outside the
 * gateways.
 */

const MAIN = program(path.resolve(__dirname, '../src/main.js'));
const CLI = program(path.resolve(__dirname, '../src/cli/admin.js'));
const ARROW = 'application/vnd.apache.arrow.stream';
/** Small enough for a test, and the same on every process (replicas must agree on it). */
const AGE_S = 3;
/** A generous bound for "within the configured age": several reclaim rounds on a loaded two-core machine. */
const RECLAIM_POLLS = 600;

interface GatewayProcess {
  url: string;
  port: number;
  child: ChildProcess;
  output(): string;
  kill(signal: NodeJS.Signals): Promise<void>;
}

function idsBatch(from: number, n: number): arrow.Table {
  return new arrow.Table({
    id: arrow.vectorFromArray(Int32Array.from({ length: n }, (_, i) => from + i)),
    name: arrow.vectorFromArray(
      Array.from({ length: n }, (_, i) => `name-${from + i}`),
      new arrow.Utf8(),
    ),
  });
}

function ipcStream(batches: number, rows: number): Buffer {
  const list = Array.from({ length: batches }, (_, b) => idsBatch(b * rows, rows).batches).flat();
  return Buffer.from(arrow.tableToIPC(new arrow.Table(list), 'stream'));
}

/** `n` rows of an int32 id and a 128-d float vector (about 0.5 KB a row). */
function vectorStream(from: number, n: number): Buffer {
  const dims = 128;
  const type = new arrow.FixedSizeList(dims, new arrow.Field('item', new arrow.Float32(), true));
  const values = new Float32Array(n * dims);
  for (let i = 0; i < values.length; i++) values[i] = (i % 997) / 997;
  const vector = arrow.makeVector(
    arrow.makeData({ type, length: n, nullCount: 0, child: arrow.makeData({ type: new arrow.Float32(), length: n * dims, data: values }) }),
  );
  const id = arrow.makeVector(Int32Array.from({ length: n }, (_, i) => from + i));
  return Buffer.from(arrow.tableToIPC(new arrow.Table({ id, vector }), 'stream'));
}

/** A request whose body the test writes piece by piece; `response` settles with the answer or the broken connection. */
function openUpload(url: string, p: string, headers: Record<string, string>) {
  const u = new URL(url);
  let req!: http.ClientRequest;
  const response = new Promise<{ status: number; text: string } | { error: Error }>((resolve) => {
    req = http.request(
      { host: u.hostname, port: Number(u.port), method: 'POST', path: p, headers: { 'content-type': ARROW, ...headers } },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        res.on('error', (error) => resolve({ error }));
      },
    );
    req.on('error', (error) => resolve({ error }));
  });
  return { req, response };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('crash safety: SIGKILLed writers, the reclaimer, storage scan [postgres]', { skip: !CATALOG_KINDS.includes('postgres') }, () => {
  let pg: Awaited<ReturnType<typeof createPgDatabase>>;
  let catalog: Client;
  let dataDir: string;
  let storageRoot: string;
  const started: GatewayProcess[] = [];

  const sql = async <T = any>(text: string, params: unknown[] = []): Promise<T[]> => (await catalog.query(text, params)).rows as T[];

  async function startProcess(env: Record<string, string>): Promise<GatewayProcess> {
    const port = await freePort();
    const full: NodeJS.ProcessEnv = {
      ...process.env,
      PORT: String(port),
      DATABASE_URL: pg.url,
      DATA_DIR: dataDir,
      STORAGE_ROOT: storageRoot,
      ADMIN_API_KEY: ADMIN_KEY,
      BOOTSTRAP_DATABASE: '',
      RECLAIM_AFTER_SECONDS: String(AGE_S),
      NODE_NO_WARNINGS: '1',
      ...env,
    };
    delete full.BASE_PATH;
    const child = spawn(process.execPath, [MAIN], { env: full, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    const g: GatewayProcess = {
      url: `http://127.0.0.1:${port}`,
      port,
      child,
      output: () => out,
      async kill(signal) {
        if (child.exitCode === null && child.signalCode === null) child.kill(signal);
        await exited;
      },
    };
    started.push(g);
    await eventually(async () => out.includes('listening on') || child.exitCode !== null, 600, 100);
    assert.equal(child.exitCode, null, `gateway exited at start:\n${out}`);
    return g;
  }

  const op = (g: GatewayProcess) => new Api(g.url, { 'x-api-key': ADMIN_KEY });

  async function newDatabase(g: GatewayProcess, name: string): Promise<Api> {
    const created = await op(g).post('/admin/v1/databases', { name });
    assert.equal(created.status, 201, created.text);
    const key = await op(g).post(`/admin/v1/databases/${name}/api-keys`, { role: 'write' });
    assert.equal(key.status, 201, key.text);
    return new Api(g.url, { 'x-api-key': key.body.api_key, 'x-service-database': name });
  }

  async function post(api: Api, p: string, body: Buffer, headers: Record<string, string> = {}) {
    const res = await fetch(api.base + p, { method: 'POST', headers: { ...api.headers, 'content-type': ARROW, ...headers }, body });
    const text = await res.text();
    return {
      status: res.status,
      text,
      json: (() => {
        try {
          return JSON.parse(text);
        } catch {
          return undefined;
        }
      })(),
    };
  }

  const countRows = async (api: Api, table: string) => {
    const r = await api.post(`/v1/table/${table}/count_rows`, {});
    assert.equal(r.status, 200, r.text);
    return Number(r.body);
  };

  const locationOf = async (database: string, table: string) =>
    (
      await sql<{ location: string }>(
        `SELECT t.location FROM tables t JOIN databases d ON d.id = t.database_id WHERE d.name = $1 AND t.name = $2`,
        [database, table],
      )
    )[0]?.location;

  const dataFiles = (location: string) => {
    const dir = path.join(storageRoot, location, 'data');
    return fs.existsSync(dir) ? fs.readdirSync(dir) : [];
  };

  function cli(...args: string[]): Promise<{ code: number; json: any; stderr: string }> {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: pg.url,
      DATA_DIR: dataDir,
      STORAGE_ROOT: storageRoot,
      NODE_NO_WARNINGS: '1',
    };
    delete env.ADMIN_API_KEY;
    return new Promise((resolve) => {
      execFile(process.execPath, [CLI, ...args], { env, timeout: 120_000 }, (err, stdout, stderr) => {
        let json: unknown;
        try {
          json = JSON.parse(stdout);
        } catch {
          json = undefined;
        }
        resolve({ code: err ? Number((err as any).code ?? -1) : 0, json, stderr });
      });
    });
  }

  before(async () => {
    assert.ok(fs.existsSync(MAIN) && fs.existsSync(CLI), 'the gateway and the CLI are built');
    pg = await createPgDatabase('lgw_crash');
    catalog = new Client({ connectionString: pg.url });
    await catalog.connect();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'lgw-crash-'));
    storageRoot = path.join(dataDir, 'tables');
  });

  after(async () => {
    for (const g of started) await g.kill('SIGKILL');
    await catalog?.end();
    await pg?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('reclaims what SIGKILL left mid-stream, mid-overwrite and mid-database-delete; live tables stay; retries succeed', async () => {
    // ---- a replica that reclaims nothing itself (RECLAIM_INTERVAL_SECONDS=0) sets the scene
    const v1 = await startProcess({ RECLAIM_INTERVAL_SECONDS: '0', ARROW_INGEST_CHUNK_BYTES: '65536' });
    const acme = await newDatabase(v1, 'acme');
    assert.equal((await post(acme, '/v1/tables/keep', ipcStream(3, 100))).status, 201);
    assert.equal((await post(acme, '/v1/tables/big', vectorStream(0, 1000))).status, 201);

    // ---- 1. SIGKILL in the middle of a streamed POST /v1/tables/{name}
    const body = ipcStream(200, 1000);
    const upload = openUpload(v1.url, '/v1/tables/half', { ...acme.headers, 'x-request-id': 'crash-mid-stream' });
    upload.req.write(body.subarray(0, body.length >> 1));
    const pendingWrite = await eventually(
      async () => {
        const [row] = await sql<{ location: string }>(`SELECT location FROM pending_locations WHERE request_id = 'crash-mid-stream'`);
        if (!row) return undefined;
        const versions = path.join(storageRoot, row.location, '_versions');
        return fs.existsSync(versions) && fs.readdirSync(versions).some((f) => f.endsWith('.manifest')) ? row.location : undefined;
      },
      600,
      20,
    );
    await v1.kill('SIGKILL');
    assert.ok('error' in (await upload.response), 'the upload was cut off');
    const orphan = path.join(storageRoot, pendingWrite);
    assert.ok(fs.existsSync(orphan), 'the killed upload left table data behind');
    assert.equal(await locationOf('acme', 'half'), undefined, 'and no catalog row points at it');

    // ---- 2. SIGKILL while an overwrite writes its data files into the table's own folder
    const v2 = await startProcess({ RECLAIM_INTERVAL_SECONDS: '0' });
    const bigLocation = (await locationOf('acme', 'big')) as string;
    const before = new Set(dataFiles(bigLocation));
    const overwrite = openUpload(v2.url, `/v1/table/big/insert?mode=overwrite`, { ...acme.headers, 'x-request-id': 'crash-mid-overwrite' });
    overwrite.req.end(vectorStream(5000, 200_000));
    await eventually(
      async () => {
        const dir = path.join(storageRoot, bigLocation, 'data');
        return dataFiles(bigLocation).some((f) => !before.has(f) && fs.statSync(path.join(dir, f)).size > 1_000_000);
      },
      3000,
      5,
    );
    await v2.kill('SIGKILL');
    assert.ok('error' in (await overwrite.response), 'the overwrite was cut off');
    const garbage = dataFiles(bigLocation).filter((f) => !before.has(f));
    assert.ok(garbage.length > 0, 'the killed overwrite left data files in the table folder');

    // ---- 3. SIGKILL while a deleted database's folder is being removed
    const v3 = await startProcess({ RECLAIM_INTERVAL_SECONDS: '0' });
    const doomed = await newDatabase(v3, 'doomed');
    assert.equal((await post(doomed, '/v1/tables/t1', ipcStream(1, 10))).status, 201);
    const junk = path.join(storageRoot, 'doomed', 'junk');
    for (let d = 0; d < 100; d++) {
      fs.mkdirSync(path.join(junk, `d${d}`), { recursive: true });
      for (let f = 0; f < 300; f++) fs.writeFileSync(path.join(junk, `d${d}`, `f${f}`), 'x');
    }
    const deletion = op(v3)
      .delete('/admin/v1/databases/doomed')
      .catch((e: Error) => e);
    await eventually(async () => (await sql(`SELECT 1 FROM databases WHERE name = 'doomed'`)).length === 0, 3000, 2);
    await v3.kill('SIGKILL');
    await deletion;
    assert.ok(fs.existsSync(path.join(storageRoot, 'doomed')), 'the killed deletion left part of the folder');
    assert.equal((await sql(`SELECT 1 FROM pending_locations WHERE location = 'doomed' AND kind = 'cleanup'`)).length, 1);

    // ---- another replica on the same catalog and storage finishes all of it
    const s = await startProcess({ RECLAIM_INTERVAL_SECONDS: '1' });
    const acmeS = new Api(s.url, acme.headers);
    await eventually(
      async () =>
        !fs.existsSync(orphan) &&
        !fs.existsSync(path.join(storageRoot, 'doomed')) &&
        !dataFiles(bigLocation).some((f) => garbage.includes(f)) &&
        (await sql(`SELECT 1 FROM pending_locations`)).length === 0,
      RECLAIM_POLLS,
      100,
    ).catch(() => assert.fail(`not reclaimed: ${JSON.stringify(fs.readdirSync(path.join(storageRoot, 'acme')))}\n${s.output()}`));

    // Live tables untouched: the overwrite never committed, so `big` still has its 1,000 rows.
    assert.equal(await countRows(acmeS, 'keep'), 300);
    assert.equal(await countRows(acmeS, 'big'), 1000);
    assert.deepEqual(new Set(dataFiles(bigLocation)), before, 'only the dead overwrite files went');

    // Each reclaim is audited (with the request that left it) and counted.
    const events = (await op(s).get('/admin/v1/databases/acme/audit?limit=100')).body.events as any[];
    const reclaims = events.filter((e) => e.action === 'storage.reclaim');
    const byTarget = new Map(reclaims.map((e) => [e.target, e]));
    assert.equal(byTarget.get(pendingWrite)?.details.reason, 'abandoned_write');
    assert.equal(byTarget.get(pendingWrite)?.request_id, 'crash-mid-stream');
    assert.ok(byTarget.get(pendingWrite)?.details.bytes > 0);
    assert.equal(byTarget.get(bigLocation)?.details.reason, 'unreferenced_files');
    assert.equal(byTarget.get(bigLocation)?.request_id, 'crash-mid-overwrite');
    const metrics = await (await fetch(`${s.url}/metrics`)).text();
    for (const reason of ['abandoned_write', 'unreferenced_files', 'interrupted_cleanup']) {
      assert.match(metrics, new RegExp(`lgw_reclaimed_locations_total\\{reason="${reason}"\\} [1-9]`), reason);
      assert.match(metrics, new RegExp(`lgw_reclaimed_bytes_total\\{reason="${reason}"\\} [1-9]`), reason);
    }

    // The retried requests succeed.
    const retried = await post(acmeS, '/v1/tables/half', body);
    assert.equal(retried.status, 201, retried.text);
    assert.equal(retried.json.num_rows, 200_000);
    const over = await post(acmeS, '/v1/table/big/insert?mode=overwrite', vectorStream(5000, 2000));
    assert.equal(over.status, 200, over.text);
    assert.equal(await countRows(acmeS, 'big'), 2000);
    assert.equal((await op(s).post('/admin/v1/databases', { name: 'doomed' })).status, 201);
    await s.kill('SIGTERM');
  });

  it('never reclaims a slow upload whose heartbeat is fresh, though it lasts several times the age', async () => {
    // Two replicas reclaim every second with a 3 s age; the upload goes to one of them and takes about 4 ages.
    const a = await startProcess({ RECLAIM_INTERVAL_SECONDS: '1', ARROW_INGEST_CHUNK_BYTES: '65536' });
    const b = await startProcess({ RECLAIM_INTERVAL_SECONDS: '1' });
    const slow = await newDatabase(a, 'slowdb');
    const body = ipcStream(120, 1000);
    const upload = openUpload(a.url, '/v1/tables/slow', { ...slow.headers, 'x-request-id': 'slow-upload' });
    const pieces = 24;
    const size = Math.ceil(body.length / pieces);
    let location: string | undefined;
    const heartbeats = new Set<string>();
    // Its folder appears with the engine's first file (later on a loaded machine); once there it must stay.
    let written = false;
    // The last piece (with the stream's end marker) completes the upload, so it is sent after the loop.
    for (let i = 0; i < pieces - 1; i++) {
      upload.req.write(body.subarray(i * size, (i + 1) * size));
      await sleep((AGE_S * 4 * 1000) / (pieces - 1));
      const [row] = await sql<{ location: string; heartbeat_at: Date }>(
        `SELECT location, heartbeat_at FROM pending_locations WHERE request_id = 'slow-upload'`,
      );
      assert.ok(row, `the upload's pending record is there after piece ${i + 1}`);
      location = row.location;
      heartbeats.add(row.heartbeat_at.toISOString());
      const exists = fs.existsSync(path.join(storageRoot, location));
      assert.ok(exists || !written, `its folder is not reclaimed (after piece ${i + 1})`);
      written ||= exists;
    }
    assert.ok(written, 'the upload wrote to its folder while it ran');
    upload.req.end(body.subarray((pieces - 1) * size));
    const res = await upload.response;
    assert.ok(!('error' in res), `answered: ${'error' in res ? res.error.message : ''}`);
    assert.equal(res.status, 201, res.text);
    assert.equal(JSON.parse(res.text).num_rows, 120_000);
    assert.ok(heartbeats.size >= 3, `the heartbeat was renewed while the upload ran (${heartbeats.size} values)`);
    assert.equal(await locationOf('slowdb', 'slow'), location, 'the record became the table row');
    assert.equal((await sql(`SELECT 1 FROM pending_locations WHERE request_id = 'slow-upload'`)).length, 0);
    assert.equal(await countRows(new Api(b.url, slow.headers), 'slow'), 120_000);
    await a.kill('SIGTERM');
    await b.kill('SIGTERM');
  });

  it('resumes a cascade drop and a table drop whose replica died, once they are older than the age', async () => {
    const g = await startProcess({ RECLAIM_INTERVAL_SECONDS: '0' });
    const db = await newDatabase(g, 'resumedb');
    const dbId = (await sql<{ id: string }>(`SELECT id FROM databases WHERE name = 'resumedb'`))[0].id;
    const made: string[] = [];
    for (const name of ['c1', 'c2', 'dropped']) {
      const conn = await lancedb.connect(path.join(storageRoot, 'resumedb'));
      (await conn.createTable(name, [{ id: 1 }, { id: 2 }])).close();
      conn.close();
      made.push(path.join('resumedb', `${name}.lance`));
    }
    assert.equal((await post(db, '/v1/tables/live', ipcStream(1, 5))).status, 201);
    // What a replica that died right after committing these catalog changes leaves: a running cascade drop and a
    // table drop's clean-up record, silent for an hour.
    await sql(
      `INSERT INTO catalog_transactions (id, database_id, operation, status, pending, owner, updated_at)
       VALUES (gen_random_uuid(), $1, 'drop_namespace', 'Running', $2::jsonb, 'dead-replica', now() - interval '1 hour')`,
      [dbId, JSON.stringify(made.slice(0, 2))],
    );
    await sql(
      `INSERT INTO pending_locations (id, database_id, database_name, location, kind, owner, started_at, heartbeat_at)
       VALUES (gen_random_uuid(), $1, 'resumedb', $2, 'cleanup', 'dead-replica', now() - interval '1 hour', now() - interval '1 hour')`,
      [dbId, made[2]],
    );
    // A writer that is merely slow (fresh heartbeat) is not touched.
    await sql(
      `INSERT INTO pending_locations (id, database_id, database_name, location, kind, owner)
       VALUES (gen_random_uuid(), $1, 'resumedb', 'resumedb/in-flight.lance', 'write', 'live-replica')`,
      [dbId],
    );
    fs.mkdirSync(path.join(storageRoot, 'resumedb', 'in-flight.lance'));
    const liveHeartbeat = setInterval(
      () => void sql(`UPDATE pending_locations SET heartbeat_at = now() WHERE owner = 'live-replica'`),
      500,
    );
    await g.kill('SIGTERM');

    const s = await startProcess({ RECLAIM_INTERVAL_SECONDS: '1' });
    await eventually(
      async () => {
        const [t] = await sql<{ status: string }>(`SELECT status FROM catalog_transactions WHERE database_id = $1`, [dbId]);
        return t.status === 'Succeeded' && made.every((m) => !fs.existsSync(path.join(storageRoot, m)));
      },
      RECLAIM_POLLS,
      100,
    );
    assert.equal((await sql(`SELECT 1 FROM pending_locations WHERE owner = 'dead-replica'`)).length, 0);
    assert.equal(await countRows(new Api(s.url, db.headers), 'live'), 5);
    const events = (await op(s).get('/admin/v1/databases/resumedb/audit?limit=100')).body.events as any[];
    assert.ok(
      events.some((e) => e.action === 'storage.reclaim' && e.details.reason === 'interrupted_cascade' && e.details.locations.length === 2),
    );
    assert.ok(events.some((e) => e.action === 'storage.reclaim' && e.target === made[2] && e.details.reason === 'interrupted_cleanup'));
    // The live writer's record (its heartbeat renewed here by hand, as its writer would) keeps its folder.
    clearInterval(liveHeartbeat);
    assert.ok(fs.existsSync(path.join(storageRoot, 'resumedb', 'in-flight.lance')));
    assert.equal((await sql(`SELECT 1 FROM pending_locations WHERE owner = 'live-replica'`)).length, 1);
    // A database being deleted cannot be created again until its folder is gone.
    await sql(
      `INSERT INTO pending_locations (id, database_id, database_name, location, kind, owner)
       VALUES (gen_random_uuid(), gen_random_uuid(), 'gone', 'gone', 'cleanup', 'live-replica')`,
    );
    const again = await op(s).post('/admin/v1/databases', { name: 'gone' });
    assert.equal(again.status, 409, again.text);
    assert.match(again.text, /still being deleted/);
    await sql(`DELETE FROM pending_locations WHERE owner = 'live-replica'`);
    await s.kill('SIGTERM');
  });

  it('storage scan lists folders no catalog row or pending record knows, and deletes them only with --delete', async () => {
    const g = await startProcess({ RECLAIM_INTERVAL_SECONDS: '0' });
    const db = await newDatabase(g, 'scandb');
    assert.equal((await post(db, '/v1/tables/written', ipcStream(1, 10))).status, 201);
    const declared = await db.post('/v1/table/declared/declare', {});
    assert.equal(declared.status, 200, declared.text);
    const conn = await lancedb.connect(path.join(storageRoot, 'scandb', 'imports'));
    (await conn.createTable('reg', [{ id: 1 }])).close();
    conn.close();
    const registered = await db.post('/v1/table/reg/register', { location: 'imports/reg.lance' });
    assert.equal(registered.status, 200, registered.text);
    const writtenLocation = (await locationOf('scandb', 'written')) as string;
    await g.kill('SIGTERM');

    // Planted by hand: a table-like folder at the top and a stray folder next to a registered table.
    const planted = path.join(storageRoot, 'scandb', 'planted.lance');
    fs.mkdirSync(path.join(planted, 'data'), { recursive: true });
    fs.writeFileSync(path.join(planted, 'data', 'x.lance'), Buffer.alloc(4096, 1));
    const stray = path.join(storageRoot, 'scandb', 'imports', 'old.lance');
    fs.mkdirSync(stray);
    fs.writeFileSync(path.join(stray, 'notes'), 'left over');

    const dry = await cli('storage', 'scan', 'scandb');
    assert.equal(dry.code, 0, dry.stderr);
    assert.deepEqual(dry.json.unknown.map((u: any) => u.location).sort(), [
      path.join('scandb', 'imports', 'old.lance'),
      path.join('scandb', 'planted.lance'),
    ]);
    assert.equal(dry.json.unknown.find((u: any) => u.location.endsWith('planted.lance')).bytes, 4096);
    assert.equal(dry.json.deleted, false);
    assert.ok(fs.existsSync(planted) && fs.existsSync(stray), 'a dry run deletes nothing');

    const del = await cli('storage', 'scan', 'scandb', '--delete');
    assert.equal(del.code, 0, del.stderr);
    assert.equal(del.json.deleted, true);
    assert.ok(!fs.existsSync(planted) && !fs.existsSync(stray), '--delete removes what was found');
    for (const live of [writtenLocation, path.join('scandb', 'imports', 'reg.lance')]) {
      assert.ok(fs.existsSync(path.join(storageRoot, live)), `${live} (a table) stays`);
    }
    const declaredLocation = (await locationOf('scandb', 'declared')) as string;
    assert.ok(fs.existsSync(path.join(storageRoot, declaredLocation)), 'a declared table stays');
    const again = await cli('storage', 'scan', 'scandb');
    assert.deepEqual(again.json.unknown, []);
    const audit = await cli('audit', 'scandb');
    assert.ok(audit.json.events.some((e: any) => e.action === 'storage.scan_delete' && e.target.endsWith('planted.lance')));
  });
});

forEachCatalog('crash safety in one process (the catalog queries on both catalogs)', (kind) => {
  let gw: TestGateway;
  let prisma: PrismaClient;
  before(async () => {
    gw = await startGateway(kind, { RECLAIM_AFTER_SECONDS: '1', RECLAIM_INTERVAL_SECONDS: '0' });
    prisma = gw.app.get(PrismaClient);
  });
  after(() => gw.close());

  const pendingCount = async () => Number((await prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM pending_locations`)[0].n);

  it('records writes and drops only while they run, and reclaims a silent record on the next round', async () => {
    const t = await newTenant(gw);
    const post = (p: string, body: Buffer) =>
      fetch(gw.url + p, { method: 'POST', headers: { ...t.api.headers, 'content-type': ARROW }, body });
    assert.equal((await post('/v1/tables/keep', ipcStream(2, 50))).status, 201);
    assert.equal((await post('/v1/table/keep/insert', ipcStream(1, 10))).status, 200);
    // A body the table refuses (another schema) ends its record too.
    const other = Buffer.from(arrow.tableToIPC(arrow.tableFromArrays({ other: Float64Array.from([1]) }), 'stream'));
    assert.equal((await post('/v1/table/keep/insert', other)).status, 400);
    await eventually(async () => (await pendingCount()) === 0);

    // What a writer that died leaves: table data at a fresh location and a record whose heartbeat stopped.
    const location = path.join(t.name, 'orphan.lance');
    const conn = await lancedb.connect(path.join(gw.config.storageRoot, t.name));
    (await conn.createTable('orphan', [{ id: 1 }])).close();
    conn.close();
    const databaseId = (await prisma.database.findUniqueOrThrow({ where: { name: t.name } })).id;
    await prisma.$executeRaw`
      INSERT INTO pending_locations (id, database_id, database_name, location, kind, owner, started_at, heartbeat_at)
      VALUES (gen_random_uuid(), ${databaseId}::uuid, ${t.name}, ${location}, 'write', 'gone', now() - interval '1 minute', now() - interval '1 minute')`;
    const round = await gw.app.get(Reclaimer).runOnce();
    assert.equal(round.locations, 1);
    assert.ok(round.bytes > 0);
    assert.ok(!fs.existsSync(path.join(gw.config.storageRoot, location)));
    assert.equal(await pendingCount(), 0);
    assert.equal(Number((await t.api.post('/v1/table/keep/count_rows', {})).body), 110);

    // A plain drop deletes the folder and its clean-up record.
    const keep = (await prisma.catalogTable.findFirstOrThrow({ where: { databaseId, name: 'keep' } })).location;
    assert.equal((await t.api.post('/v1/table/keep/drop', {})).status, 200);
    assert.ok(!fs.existsSync(path.join(gw.config.storageRoot, keep)));
    assert.equal(await pendingCount(), 0);

    fs.mkdirSync(path.join(gw.config.storageRoot, t.name, 'stray'), { recursive: true });
    const report = await gw.app.get(StorageScan).scan(t.name, { delete: false, actor: 'test' });
    assert.deepEqual(
      report.unknown.map((u) => u.location),
      [path.join(t.name, 'stray')],
    );
  });
});
