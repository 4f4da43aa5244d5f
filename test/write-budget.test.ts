import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as http from 'node:http';
import { after, before, it } from 'node:test';
import * as lancedb from '@lancedb/lancedb';
import * as arrow from 'apache-arrow';
import { WriteBudget } from '../src/modules/data/writes/write-budget';
import { forEachCatalog, newTenant, startGateway, Tenant, TestGateway } from './helpers/gateway';

/**
 * Bounded memory for every write (WRITE_MEMORY_BUDGET_BYTES): bodies of writes that commit once are spilled to a
 * temporary file while they arrive, a write reserves its bytes before reading them, and one that does not fit is
 * answered 503 "Slow down" with Retry-After with nothing written. Temporary files never outlive their request.
 */
const ARROW = 'application/vnd.apache.arrow.stream';
const DIMS = 128;
const BUDGET = 1024 * 1024;
const BUFFERED_LIMIT = 4 * 1024 * 1024;

/** An Arrow IPC stream of `n` rows (id, 128-d vector), in batches of `batchRows`: about 520 bytes a row. */
function vectorStream(from: number, n: number, batchRows = n): Buffer {
  const type = new arrow.FixedSizeList(DIMS, new arrow.Field('item', new arrow.Float32(), true));
  const batches: arrow.RecordBatch[] = [];
  for (let at = 0; at < n; at += batchRows) {
    const k = Math.min(batchRows, n - at);
    const values = new Float32Array(k * DIMS);
    for (let i = 0; i < values.length; i++) values[i] = ((from + at) * DIMS + i) % 997;
    const vector = arrow.makeVector(
      arrow.makeData({
        type,
        length: k,
        nullCount: 0,
        child: arrow.makeData({ type: new arrow.Float32(), length: k * DIMS, data: values }),
      }),
    );
    const id = arrow.makeVector(Int32Array.from({ length: k }, (_, i) => from + at + i));
    batches.push(...new arrow.Table({ id, vector }).batches);
  }
  return Buffer.from(arrow.tableToIPC(new arrow.Table(batches), 'stream'));
}

type Answer = { status: number; text: string; headers: http.IncomingHttpHeaders } | { error: Error };

/** A POST whose body the test writes piece by piece; `response` settles with the answer or the broken connection. */
function openUpload(url: string, p: string, headers: Record<string, string>) {
  const u = new URL(url);
  let req!: http.ClientRequest;
  const response = new Promise<Answer>((resolve) => {
    req = http.request(
      { host: u.hostname, port: Number(u.port), method: 'POST', path: p, headers: { 'content-type': ARROW, ...headers } },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text, headers: res.headers }));
        res.on('error', (error) => resolve({ error }));
      },
    );
    req.on('error', (error) => resolve({ error }));
  });
  return { req, response };
}

function answered(a: Answer): { status: number; text: string; headers: http.IncomingHttpHeaders } {
  if ('error' in a) throw a.error;
  return a;
}

/** A whole body in one request, with its Content-Length (or chunked when `chunked`). */
async function post(url: string, p: string, headers: Record<string, string>, body: Buffer, chunked = false) {
  const up = openUpload(url, p, chunked ? headers : { ...headers, 'content-length': String(body.length) });
  up.req.end(body);
  return answered(await up.response);
}

const tick = () => new Promise((r) => setTimeout(r, 10));

/** Waits for a condition of the gateway's state (bounded: a condition that never holds fails the test). */
async function until(what: string, cond: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 3000; i++) {
    if (await cond()) return;
    await tick();
  }
  assert.fail(`never happened: ${what}`);
}

forEachCatalog('write memory budget and spilled bodies', (kind) => {
  let gw: TestGateway;
  let tenant: Tenant;
  let db: lancedb.Connection;
  let budget: WriteBudget;
  let headers: Record<string, string>;

  const spillFiles = () => {
    try {
      return fs.readdirSync(gw.config.arrow.spillDir);
    } catch {
      return [];
    }
  };
  const count = async (name: string) => (await db.openTable(name)).countRows();
  const create = async (name: string) => {
    const r = await post(gw.url, `/v1/table/${name}/create`, headers, vectorStream(0, 10));
    assert.equal(r.status, 200, r.text);
  };

  before(async () => {
    // Refusals at once (no waiting for the budget), so that the test sees them without waiting.
    gw = await startGateway(kind, {
      WRITE_MEMORY_BUDGET_BYTES: String(BUDGET),
      ARROW_BUFFERED_LIMIT_BYTES: String(BUFFERED_LIMIT),
      WRITE_BUDGET_WAIT_MS: '0',
    });
    tenant = await newTenant(gw);
    headers = { 'x-api-key': tenant.writeKey, 'x-service-database': tenant.name };
    db = await lancedb.connect(`db://${tenant.name}`, { apiKey: tenant.writeKey, hostOverride: gw.url });
    budget = gw.app.get(WriteBudget);
  });
  after(async () => {
    db?.close();
    await gw?.close();
  });

  it('answers 503 Slow down with Retry-After past the budget, writes nothing for it, and commits the admitted write once', async () => {
    await create('held');
    const first = vectorStream(1000, 1100); // ~570 KB: two do not fit in 1 MiB
    const second = vectorStream(5000, 1100);
    assert.ok(first.length > BUDGET / 2 && first.length < BUDGET);

    const held = openUpload(gw.url, '/v1/table/held/insert', { ...headers, 'content-length': String(first.length) });
    held.req.write(first.subarray(0, 100_000));
    // It holds (reserved) the record batch it is reading, and spills.
    await until('the first insert holds its reservation and spills', () => budget.inFlightBytes > 0 && spillFiles().length === 1);
    const heldBytes = budget.inFlightBytes;
    assert.ok(heldBytes > BUDGET / 2 && heldBytes <= first.length);

    // Its batch does not fit beside the first one's: refused before it is held (the rest of the body is drained).
    const refused = await post(gw.url, '/v1/table/held/insert', headers, second);
    assert.equal(refused.status, 503, refused.text);
    assert.equal(refused.headers['retry-after'], '1');
    const body = JSON.parse(refused.text);
    assert.equal(body.title, 'Slow down');
    assert.match(body.detail, /^Slow down: /);
    // A merge_insert and an overwrite are refused alike.
    assert.equal((await post(gw.url, '/v1/table/held/merge_insert?on=id&when_not_matched_insert_all=true', headers, second)).status, 503);
    assert.equal((await post(gw.url, '/v1/table/held/insert?mode=overwrite', headers, second)).status, 503);
    // Without Content-Length alike.
    const chunked = await post(gw.url, '/v1/table/held/insert', headers, second, true);
    assert.equal(chunked.status, 503, chunked.text);
    assert.equal(chunked.headers['retry-after'], '1');
    assert.equal(budget.inFlightBytes, heldBytes, 'refused writes give back what they took');
    assert.equal(spillFiles().length, 1, 'and their spill files are gone');
    assert.equal(await count('held'), 10, 'nothing written for the refused writes');

    held.req.end(first.subarray(100_000));
    const ok = answered(await held.response);
    assert.equal(ok.status, 200, ok.text);
    assert.equal(JSON.parse(ok.text).num_inserted_rows, 1100);
    assert.equal(await count('held'), 1110, 'the admitted insert committed once');

    // Memory returns: the budget is free again, no spill file is left, and the refused insert now succeeds.
    assert.equal(budget.inFlightBytes, 0);
    assert.deepEqual(spillFiles(), []);
    const retried = await post(gw.url, '/v1/table/held/insert', headers, second);
    assert.equal(retried.status, 200, retried.text);
    assert.equal(await count('held'), 2210);
  });

  it('commits concurrent writes within the budget exactly once each (official client)', async () => {
    await create('together');
    const rowsOf = (from: number, n: number) =>
      Array.from({ length: n }, (_, i) => ({ id: from + i, vector: Array.from({ length: DIMS }, (_, j) => (i + j) % 7) }));
    const t = await db.openTable('together');
    // Three bodies of ~50 KB: all fit in the budget at once.
    await Promise.all([t.add(rowsOf(100, 100)), t.add(rowsOf(200, 100)), t.add(rowsOf(300, 100))]);
    assert.equal(await t.countRows(), 310);
    const ids = (await t.query().select(['id']).toArray()).map((r) => Number(r.id));
    assert.equal(new Set(ids).size, 310, 'no row written twice');
    assert.equal(budget.inFlightBytes, 0);
    assert.deepEqual(spillFiles(), []);
  });

  it('admits a lone body larger than the budget, spilled in many batches, and commits it correctly', async () => {
    await create('large');
    const big = vectorStream(10_000, 6000, 500); // ~3 MB in 12 batches: 3 × the budget, under the body limit
    assert.ok(big.length > BUDGET * 2 && big.length < BUFFERED_LIMIT);
    const r = await post(gw.url, '/v1/table/large/insert', headers, big);
    assert.equal(r.status, 200, r.text);
    assert.equal(await count('large'), 6010);
    const t = await db.openTable('large');
    assert.equal(await t.countRows('id >= 10000 AND id < 16000'), 6000);
    const one = await t.query().where('id = 15999').toArray();
    assert.equal(one.length, 1);
    assert.equal(Number((one[0].vector as { get(i: number): number }).get(5)), ((10_000 + 5500) * DIMS + 499 * DIMS + 5) % 997);
    // Chunked (no Content-Length), also larger than the budget, while nothing else is in flight.
    const chunked = await post(gw.url, '/v1/table/large/insert?mode=overwrite', headers, vectorStream(0, 4000, 1000), true);
    assert.equal(chunked.status, 200, chunked.text);
    assert.equal(await count('large'), 4000);
    assert.equal(budget.inFlightBytes, 0);
    assert.deepEqual(spillFiles(), []);
  });

  it('refuses a Content-Length above ARROW_BUFFERED_LIMIT_BYTES with 413 before reading the body', async () => {
    await create('limited');
    const up = openUpload(gw.url, '/v1/table/limited/insert', { ...headers, 'content-length': String(BUFFERED_LIMIT + 1) });
    up.req.write(vectorStream(0, 10)); // a little of it; the rest never comes
    const r = answered(await up.response);
    up.req.destroy();
    assert.equal(r.status, 413, r.text);
    assert.equal(budget.inFlightBytes, 0);
    assert.deepEqual(spillFiles(), []);
    assert.equal(await count('limited'), 10);
  });

  it('lets a write that does not fit wait its turn when WRITE_BUDGET_WAIT_MS allows it, then commits it once', async () => {
    const waiting = await startGateway(kind, { WRITE_MEMORY_BUDGET_BYTES: String(BUDGET), WRITE_BUDGET_WAIT_MS: '600000' });
    try {
      const t = await newTenant(waiting);
      const h = { 'x-api-key': t.writeKey, 'x-service-database': t.name };
      const wb = waiting.app.get(WriteBudget);
      assert.equal((await post(waiting.url, '/v1/table/queued/create', h, vectorStream(0, 10))).status, 200);
      const first = vectorStream(1000, 1100);
      const second = vectorStream(5000, 1100);
      const held = openUpload(waiting.url, '/v1/table/queued/insert', { ...h, 'content-length': String(first.length) });
      held.req.write(first.subarray(0, 100_000));
      await until('the first insert holds its reservation', () => wb.inFlightBytes > 0);
      const heldBytes = wb.inFlightBytes;
      const queued = openUpload(waiting.url, '/v1/table/queued/insert', { ...h, 'content-length': String(second.length) });
      queued.req.end(second);
      await until('the second insert waits for the budget', () => wb.waitingWrites === 1);
      assert.equal(wb.inFlightBytes, heldBytes, 'a waiting write holds nothing');
      held.req.end(first.subarray(100_000));
      const [a, b] = [answered(await held.response), answered(await queued.response)];
      assert.equal(a.status, 200, a.text);
      assert.equal(b.status, 200, b.text);
      const c = await lancedb.connect(`db://${t.name}`, { apiKey: t.writeKey, hostOverride: waiting.url });
      assert.equal(await (await c.openTable('queued')).countRows(), 2210, 'each committed once');
      c.close();
      assert.equal(wb.inFlightBytes, 0);
      assert.equal(wb.waitingWrites, 0);
    } finally {
      await waiting.close();
    }
  });

  it('removes the spill file and gives back the reservation after a bad body and after a client abort', async () => {
    await create('broken');
    // A bad body: the stream is cut in the middle of a record batch (400), after part of it was spilled.
    const good = vectorStream(100, 1000);
    const bad = await post(gw.url, '/v1/table/broken/insert', headers, good.subarray(0, good.length - 5000));
    assert.equal(bad.status, 400, bad.text);
    assert.equal(budget.inFlightBytes, 0);
    assert.deepEqual(spillFiles(), []);

    // A client that goes away mid-upload.
    const up = openUpload(gw.url, '/v1/table/broken/insert', { ...headers, 'content-length': String(good.length) });
    up.req.write(good.subarray(0, 200_000));
    await until('the upload is spilling', () => spillFiles().length === 1 && budget.inFlightBytes > 0);
    up.req.destroy();
    await up.response;
    await until('the aborted upload is cleaned up', () => spillFiles().length === 0 && budget.inFlightBytes === 0);
    assert.equal(await count('broken'), 10, 'nothing written');

    // The table still takes writes.
    const r = await post(gw.url, '/v1/table/broken/insert', headers, good);
    assert.equal(r.status, 200, r.text);
    assert.equal(await count('broken'), 1010);
  });
});
