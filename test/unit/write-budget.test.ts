import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ApiError } from '../../src/platform/http/errors';
import { loadConfig } from '../../src/platform/config/config';
import { WriteBudget } from '../../src/modules/data/writes/write-budget';

const MiB = 1024 * 1024;
const budgetOf = (bytes: number, waitMs: number) =>
  new WriteBudget(loadConfig({ DATA_DIR: '/nonexistent', WRITE_MEMORY_BUDGET_BYTES: String(bytes), WRITE_BUDGET_WAIT_MS: String(waitMs) }));
const isSlowDown = (err: unknown) =>
  err instanceof ApiError && err.status === 503 && err.headers['Retry-After'] === '1' && /^Slow down: /.test(err.message);

describe('the write budget', () => {
  test('admits within the budget, refuses past it at once when it may not wait, and takes back what is released', async () => {
    const b = budgetOf(4 * MiB, 0);
    const r1 = await b.reserve(3 * MiB);
    const r2 = await b.reserve(1 * MiB);
    assert.equal(b.inFlightBytes, 4 * MiB);
    await assert.rejects(b.reserve(1), isSlowDown);
    assert.equal(b.inFlightBytes, 4 * MiB, 'a refusal takes nothing');
    r1.release();
    r1.release(); // idempotent
    assert.equal(b.inFlightBytes, 1 * MiB);
    const r3 = await b.reserve(3 * MiB);
    r2.release();
    r3.release();
    assert.equal(b.inFlightBytes, 0);
  });

  test('always admits a write when no other is in flight, even one larger than the budget', async () => {
    const b = budgetOf(1 * MiB, 0);
    const big = await b.reserve(10 * MiB);
    await assert.rejects(b.reserve(1), isSlowDown);
    big.release();
    (await b.reserve(10 * MiB)).release();
  });

  test('a reservation grows as bytes arrive, and is refused (keeping what it had) past the budget', async () => {
    const b = budgetOf(2 * MiB, 0);
    const other = await b.reserve(1 * MiB);
    const r = await b.reserve(0);
    r.grow(512 * 1024);
    assert.throws(() => r.grow(1 * MiB), isSlowDown);
    assert.equal(r.bytes, 512 * 1024);
    assert.equal(b.inFlightBytes, 1.5 * MiB);
    r.release();
    other.release();
    assert.equal(b.inFlightBytes, 0);
  });

  test('waiting writes are admitted in arrival order as the budget frees', async () => {
    const b = budgetOf(4 * MiB, 60_000);
    const first = await b.reserve(4 * MiB);
    const order: string[] = [];
    const big = b.reserve(3 * MiB).then((r) => (order.push('big'), r));
    const small = b.reserve(1 * MiB).then((r) => (order.push('small'), r));
    await new Promise((r) => setImmediate(r));
    assert.equal(b.waitingWrites, 2);
    assert.deepEqual(order, []);
    first.release();
    const [rb, rs] = await Promise.all([big, small]);
    assert.deepEqual(order, ['big', 'small']);
    assert.equal(b.inFlightBytes, 4 * MiB);
    assert.equal(b.waitingWrites, 0);
    // A newcomer that would fit does not jump the queue.
    rb.release(); // 1 MiB held (small)
    const two = b.reserve(2 * MiB); // fits: admitted at once
    const r2 = await two;
    const next = b.reserve(2 * MiB); // 3 + 2 > 4: waits
    const jumper = b.reserve(1 * MiB); // would fit (3 + 1), but someone waits before it
    await new Promise((r) => setImmediate(r));
    assert.equal(b.waitingWrites, 2);
    r2.release();
    const [rn, rj] = await Promise.all([next, jumper]);
    rn.release();
    rj.release();
    rs.release();
    assert.equal(b.inFlightBytes, 0);
  });

  test('a write that waited WRITE_BUDGET_WAIT_MS in vain is answered 503 and leaves the queue', async () => {
    const b = budgetOf(1 * MiB, 20);
    const held = await b.reserve(1 * MiB);
    await assert.rejects(b.reserve(1 * MiB), isSlowDown);
    assert.equal(b.waitingWrites, 0);
    assert.equal(b.inFlightBytes, 1 * MiB);
    held.release();
    assert.equal(b.inFlightBytes, 0);
  });

  test('tells its listeners when writes start holding memory and when the last one gives it back, once each', async () => {
    const b = budgetOf(4 * MiB, 5_000);
    const told: boolean[] = [];
    b.onWriting((w) => told.push(w));
    const r1 = await b.reserve(3 * MiB);
    const waiting = b.reserve(2 * MiB); // does not fit beside r1: admitted inside r1's release, when nothing else is held
    assert.equal(b.waitingWrites, 1);
    r1.release();
    const r2 = await waiting;
    assert.deepEqual(told, [true], 'a write admitted as the last one ends: memory held all along, never "stopped"');
    r2.release();
    assert.deepEqual(told, [true, false]);
    const r3 = await b.reserve(1);
    r3.release();
    assert.deepEqual(told, [true, false, true, false]);
  });
});
