import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as lancedb from '@lancedb/lancedb';
import * as arrow from 'apache-arrow';
import { Message } from 'apache-arrow/ipc/metadata/message';
import { ErrorReply, expectProblem } from './helpers/assertions';
import { ADMIN_KEY, createPgDatabase, forEachCatalog, newTenant, Tenant } from './helpers/gateway';
import { startGatewayProcess } from './helpers/gateway-process';
import {
  ARROW_STREAM,
  compressedStream,
  crashFixture,
  deepSchema,
  EOS,
  frame,
  messagesOf,
  nullColumnStream,
  oneRowTable,
  recordBatchMessage,
  schemaStream,
  sharedChildrenSchemaMessage,
  streamOf,
  wideSchema,
} from './helpers/arrow-craft';

/**
 * Issue 9: a crafted Arrow IPC upload must never take a replica down. The gateway runs as its own OS process with a
 * 256 MiB heap (so a regression kills that process, fast, instead of this test runner), and is sent the crash fixture
 * and other hostile streams on both create routes: each is a 400 with code 13 (413 for a size over a limit), nothing
 * is registered or left on disk, and the replica keeps answering meanwhile and after.
 */

/** The two routes that create a table from an uploaded stream (Enterprise streamed create; create_table). */
const ROUTES = {
  enterprise: (name: string) => `/v1/tables/${name}`,
  create: (name: string) => `/v1/table/${name}/create`,
};
type Route = keyof typeof ROUTES;

/** An answer; `body` is its JSON (undefined if it is not JSON). */
type Answer = ErrorReply;

function answer(status: number, headers: Headers, text: string): Answer {
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status, headers, body, text };
}

forEachCatalog('hostile Arrow uploads', (kind) => {
  let url: string;
  let dataDir: string;
  let tenant: Tenant;
  let other: Tenant;
  let stop: () => Promise<void>;
  let n = 0;
  const fresh = () => `t${++n}`;

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'lgw-arrow-'));
    const pg = kind === 'postgres' ? await createPgDatabase() : undefined;
    const gw = await startGatewayProcess({
      DATA_DIR: dataDir,
      ADMIN_API_KEY: ADMIN_KEY,
      BOOTSTRAP_DATABASE: '',
      NODE_OPTIONS: '--max-old-space-size=256',
      ...(pg ? { DATABASE_URL: pg.url } : {}),
    });
    url = gw.url;
    stop = async () => {
      await gw.close();
      await pg?.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    };
    tenant = await newTenant(gw);
    other = await newTenant(gw);
  });
  after(async () => {
    await stop?.();
  });

  async function upload(route: Route, name: string, body: Buffer, t: Tenant = tenant): Promise<Answer> {
    const res = await fetch(url + ROUTES[route](name), {
      method: 'POST',
      headers: { 'x-api-key': t.writeKey, 'x-service-database': t.name, 'content-type': ARROW_STREAM },
      body,
    });
    return answer(res.status, res.headers, await res.text());
  }

  /** Sends `head` of a body and keeps the request open; resolves with the answer (then drops the request). */
  function uploadOpen(route: Route, name: string, head: Buffer): Promise<Answer> {
    const u = new URL(url + ROUTES[route](name));
    return new Promise((resolve, reject) => {
      const req = http.request(
        {
          host: u.hostname,
          port: Number(u.port),
          method: 'POST',
          path: u.pathname,
          headers: { 'x-api-key': tenant.writeKey, 'x-service-database': tenant.name, 'content-type': ARROW_STREAM },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const headers = new Headers();
            for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') headers.set(k, v);
            req.destroy();
            resolve(answer(res.statusCode ?? 0, headers, Buffer.concat(chunks).toString('utf8')));
          });
        },
      );
      req.on('error', reject);
      req.write(head); // chunked, never ended
    });
  }

  const health = async () => (await fetch(`${url}/healthz`)).status;
  const listed = async () => {
    const r = await fetch(`${url}/v1/tables`, { headers: { 'x-api-key': tenant.writeKey, 'x-service-database': tenant.name } });
    assert.equal(r.status, 200);
    return ((await r.json()) as { tables: string[] }).tables;
  };
  const folders = () => {
    const dir = path.join(dataDir, 'tables', tenant.name);
    return fs.existsSync(dir) ? fs.readdirSync(dir) : [];
  };
  /** The tenant's catalog and storage are as they were. */
  async function nothingLeft(before: { tables: string[]; folders: string[] }) {
    assert.deepEqual(await listed(), before.tables, 'nothing registered');
    assert.deepEqual(folders(), before.folders, 'nothing left in storage');
  }
  const snapshot = async () => ({ tables: await listed(), folders: folders() });

  /** A 400 (or 413) with code 13 and the problem body (docs/rest-contract.md §7). */
  const invalid = (a: Answer, status = 400, msg?: RegExp) => expectProblem(a, status, 13, { msg });

  describe('the crash fixture (issue 9)', () => {
    it('is a 400 with code 13 on both routes, answered while the body is still open; /healthz answers meanwhile', async () => {
      const before = await snapshot();
      const fixture = crashFixture();
      const schemaEnd = 8 + fixture.readInt32LE(4);
      for (const route of Object.keys(ROUTES) as Route[]) {
        // Only the schema message, and the request left open: the answer must not wait for the rest.
        const pending = uploadOpen(route, fresh(), fixture.subarray(0, schemaEnd));
        assert.equal(await health(), 200);
        invalid(await pending, 400, /invalid Arrow IPC stream/);
        invalid(await upload(route, fresh(), fixture), 400, /invalid Arrow IPC stream/);
      }
      assert.equal(await health(), 200);
      await nothingLeft(before);
    });

    it('many at once, while another tenant uploads and health checks run: every one a 400, the rest unaffected', async () => {
      const before = await snapshot();
      const fixture = crashFixture();
      const hostile = Array.from({ length: 20 }, (_, i) => upload(i % 2 ? 'enterprise' : 'create', fresh(), fixture));
      const checks = Array.from({ length: 10 }, () => health());
      const honest = upload('enterprise', 'honest', streamOf(oneRowTable('bob')), other);
      for (const a of await Promise.all(hostile)) invalid(a, 400);
      assert.deepEqual(await Promise.all(checks), Array(10).fill(200));
      const ok = await honest;
      assert.equal(ok.status, 201, ok.text);
      assert.equal(ok.body.num_rows, 1);
      assert.equal(await health(), 200);
      await nothingLeft(before);
    });
  });

  describe('other malformed streams', () => {
    it('a corrupted body byte (invalid UTF-8 in a string column) is a 400 from the engine, with nothing left behind', async () => {
      const before = await snapshot();
      const valid = streamOf(oneRowTable('alice'));
      const at = valid.indexOf(Buffer.from('alice'));
      assert.ok(at > 0);
      const bad = Buffer.from(valid);
      bad[at] = 0xff;
      for (const route of Object.keys(ROUTES) as Route[]) invalid(await upload(route, fresh(), bad), 400, /UTF/i);
      await nothingLeft(before);
    });

    it('every byte of the record-batch message flipped in turn: a 400, or the row stored as sent — never a 5xx or an empty table', async () => {
      const valid = streamOf(oneRowTable());
      const [, batch] = messagesOf(valid);
      const end = batch.at + 8 + batch.meta.length + batch.body.length;
      const seen: Record<number, number> = {};
      for (let i = batch.at; i < end; i++) {
        const s = Buffer.from(valid);
        s[i] ^= 0xff;
        const name = fresh();
        const a = await upload('enterprise', name, s);
        seen[a.status] = (seen[a.status] ?? 0) + 1;
        if (a.status === 201) {
          assert.equal(a.body.num_rows, 1, `byte ${i}`);
          continue;
        }
        invalid(a, a.status === 413 ? 413 : 400);
        assert.ok(!(await listed()).includes(name), `byte ${i}: nothing registered`);
      }
      assert.ok(seen[400] > 0, JSON.stringify(seen));
      assert.equal(await health(), 200);
    });

    it('a truncated stream is a 400 wherever it is cut', async () => {
      const before = await snapshot();
      const valid = streamOf(oneRowTable());
      const [schema, batch] = messagesOf(valid);
      const cuts = [4, 12, schema.at + 100, batch.at + 4, batch.at + 40, batch.at + 8 + batch.meta.length + 10];
      for (const route of Object.keys(ROUTES) as Route[]) {
        for (const cut of cuts) invalid(await upload(route, fresh(), valid.subarray(0, cut)), 400, /truncated|invalid Arrow IPC stream/);
      }
      await nothingLeft(before);
    });

    it('a huge declared message length is refused at once, without waiting for the bytes', async () => {
      const before = await snapshot();
      const head = Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]);
      for (const route of Object.keys(ROUTES) as Route[]) {
        invalid(await uploadOpen(route, fresh(), head), 400, /bad message length 2147483647/);
      }
      await nothingLeft(before);
    });

    it('too many fields, too deep a nesting, one child listed 2^30 times: 400', async () => {
      const before = await snapshot();
      for (const route of Object.keys(ROUTES) as Route[]) {
        invalid(await upload(route, fresh(), schemaStream(wideSchema(10_001))), 400, /10001 entries, over the limit of 10000/);
        invalid(await upload(route, fresh(), schemaStream(deepSchema(65))), 400, /nested deeper than 64 levels/);
        invalid(await upload(route, fresh(), Buffer.concat([frame(sharedChildrenSchemaMessage(30)), EOS])), 400);
      }
      assert.equal(await health(), 200);
      await nothingLeft(before);
    });

    it('a compressed buffer declaring 1 TiB once decompressed is a 413 (the engine would abort the process allocating it)', async () => {
      const before = await snapshot();
      const bomb = compressedStream(oneRowTable(), { buffer: 1, size: BigInt(2) ** BigInt(40) });
      for (const route of Object.keys(ROUTES) as Route[]) invalid(await upload(route, fresh(), bomb), 413, /decompressing/);
      assert.equal(await health(), 200);
      await nothingLeft(before);
    });

    it('a null column of 2^31 - 1 rows in 300 bytes is a 400 (it kept the engine busy for 20 s)', async () => {
      const before = await snapshot();
      for (const route of Object.keys(ROUTES) as Route[]) {
        invalid(await upload(route, fresh(), nullColumnStream(2 ** 31 - 1)), 400, /more than its batch's 0 bytes of buffers can hold/);
      }
      await nothingLeft(before);
    });

    it('nulls declared without a validity bitmap are a 400 (the engine panicked and committed an empty table)', async () => {
      const before = await snapshot();
      const [schema, batch] = messagesOf(streamOf(oneRowTable()));
      const rb = Message.decode(batch.meta).header() as unknown as {
        nodes: Array<{ length: number; nullCount: number }>;
        buffers: Array<{ offset: number; length: number }>;
      };
      const meta = recordBatchMessage({
        rows: 1,
        nodes: rb.nodes.map((x, i) => [x.length, i === 0 ? 1 : x.nullCount]),
        buffers: rb.buffers.map((b) => [b.offset, b.length]),
        bodyLength: batch.body.length,
      });
      const stream = Buffer.concat([frame(schema.meta), frame(meta, batch.body), EOS]);
      for (const route of Object.keys(ROUTES) as Route[]) invalid(await upload(route, fresh(), stream), 400, /validity bitmap/);
      await nothingLeft(before);
    });
  });

  describe('honest uploads still work', () => {
    it('plain and compressed streams on both routes', async () => {
      for (const route of Object.keys(ROUTES) as Route[]) {
        for (const body of [streamOf(oneRowTable()), compressedStream(oneRowTable())]) {
          const name = fresh();
          const a = await upload(route, name, body);
          assert.ok(a.status === 200 || a.status === 201, a.text);
          assert.ok((await listed()).includes(name));
        }
      }
    });

    it('the official client (remote mode, LZ4-compressed uploads): create, add, count, search', async () => {
      const db = await lancedb.connect(`db://${tenant.name}`, { apiKey: tenant.writeKey, hostOverride: url });
      const rows = Array.from({ length: 200 }, (_, i) => ({ id: i, name: `n${i}`, vector: [i, i * 2, 1, 0] }));
      const t = await db.createTable('official', rows);
      await t.add([{ id: 200, name: 'n200', vector: [1, 1, 1, 1] }]);
      assert.equal(await t.countRows(), 201);
      const hits = await t.vectorSearch([0, 0, 1, 0]).limit(1).toArray();
      assert.equal(hits[0].id, 0);
      const wide = new arrow.Table({ a: arrow.vectorFromArray(Int32Array.from([1, 2])) });
      const t2 = await db.createTable('arrow_table', wide);
      assert.equal(await t2.countRows(), 2);
    });
  });
});
