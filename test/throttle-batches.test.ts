import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import Redis from 'ioredis';
import { setTimeout as sleep } from 'node:timers/promises';
import { batchFor, RedisThrottlerStorage, REPORT_AFTER_MS, TAKES_PER_CALL } from '../src/modules/throttling/redis-throttler.storage';
import { SHARED_REDIS_URL } from './helpers/redis';

// The rate-limit storage on its own, on the shared Redis: two storages stand for two replicas.
describe('rate-limit counting in batches (RedisThrottlerStorage)', () => {
  let a: Redis;
  let b: Redis;
  before(() => {
    a = new Redis(SHARED_REDIS_URL);
    b = new Redis(SHARED_REDIS_URL);
  });
  after(() => {
    a.disconnect();
    b.disconnect();
  });
  const fresh = () => `test:${randomBytes(6).toString('hex')}`;
  const hits = (r: Redis, key: string) => r.get(`{${key}:database}:hits`).then(Number);

  it('counts small limits exactly, one request at a time', async () => {
    assert.equal(batchFor(199), 1);
    const s = new RedisThrottlerStorage(a);
    const key = fresh();
    const out = [];
    for (let i = 0; i < 7; i++) out.push(await s.increment(key, 60_000, 5, 60_000, 'database'));
    assert.deepEqual(
      out.map((r) => r.isBlocked),
      [false, false, false, false, false, true, true],
    );
  });

  it('takes 1% of a large limit per round trip, after an optimistic first 1% counted a moment later', async () => {
    assert.equal(batchFor(1000), 10);
    assert.equal(batchFor(1_000_000), 100);
    const s = new RedisThrottlerStorage(a);
    const key = fresh();
    for (let i = 0; i < 55; i++) assert.equal((await s.increment(key, 60_000, 1000, 60_000, 'database')).isBlocked, false);
    assert.equal(await hits(a, key), 60, 'the first 10 admitted at once and counted with the first take, then five batches of 10');
    // Concurrent requests of a quiet database use the optimistic credit: counted in Redis within REPORT_AFTER_MS.
    const key2 = fresh();
    await Promise.all(Array.from({ length: 10 }, () => s.increment(key2, 60_000, 1000, 60_000, 'database')));
    assert.equal(await hits(a, key2), 0, 'not counted yet');
    await sleep(REPORT_AFTER_MS + 100);
    assert.equal(await hits(a, key2), 10);
  });

  it('costs quiet databases no round trip per request: their counts go to Redis together, 100 databases a script call', async () => {
    const counted = new Redis(SHARED_REDIS_URL);
    let pipelines = 0;
    let calls = 0;
    const pipeline = counted.pipeline.bind(counted);
    counted.pipeline = ((...args: Parameters<Redis['pipeline']>) => {
      pipelines++;
      const p = pipeline(...args);
      const exec = p.exec.bind(p);
      p.exec = ((...a: Parameters<typeof exec>) => ((calls += p.length), exec(...a))) as typeof exec;
      return p;
    }) as Redis['pipeline'];
    try {
      const s = new RedisThrottlerStorage(counted);
      const keys = Array.from({ length: 200 }, fresh);
      const results = await Promise.all(keys.map((k) => s.increment(k, 60_000, 1000, 60_000, 'database')));
      assert.ok(results.every((r) => !r.isBlocked));
      assert.equal(pipelines, 0, 'answered before any Redis call');
      await sleep(REPORT_AFTER_MS + 150);
      assert.ok(pipelines >= 1 && pipelines <= 2, `${pipelines} pipelines for 200 databases`);
      assert.equal(TAKES_PER_CALL, 100);
      assert.ok(calls >= 2 && calls <= 3, `${calls} script calls for 200 databases`);
      assert.deepEqual(
        await Promise.all(keys.map((k) => hits(counted, k))),
        keys.map(() => 1),
      );
    } finally {
      counted.disconnect();
    }
  });

  it('lets two replicas through at most one optimistic 1% each past the limit together, and blocks after it', async () => {
    const ra = new RedisThrottlerStorage(a);
    const rb = new RedisThrottlerStorage(b);
    const key = fresh();
    const results = await Promise.all(
      Array.from({ length: 1300 }, (_, i) => (i % 2 ? ra : rb).increment(key, 60_000, 1000, 60_000, 'database')),
    );
    const admitted = results.filter((r) => !r.isBlocked).length;
    assert.ok(admitted <= 1000 + 2 * batchFor(1000), `admitted ${admitted}`);
    assert.ok(admitted >= 1000 - 2 * batchFor(1000), `admitted ${admitted}`);
    const last = await ra.increment(key, 60_000, 1000, 60_000, 'database');
    assert.equal(last.isBlocked, true);
    assert.ok(last.timeToBlockExpire > 0);
  });

  it('a database that reached half its limit starts its next window on reserved credit only (never past the limit)', async () => {
    const ra = new RedisThrottlerStorage(a);
    const rb = new RedisThrottlerStorage(b);
    const key = fresh();
    // Window 1 (1 s): both replicas use 60% of a limit of 200 (batches of 2).
    for (let i = 0; i < 120; i++) await (i % 2 ? ra : rb).increment(key, 1000, 200, 1000, 'database');
    await sleep(REPORT_AFTER_MS + 100);
    await sleep(1000); // the window ends
    // Window 2: flat out from both; nothing optimistic any more, so never more than the limit.
    const results = await Promise.all(Array.from({ length: 260 }, (_, i) => (i % 2 ? ra : rb).increment(key, 5000, 200, 5000, 'database')));
    const admitted = results.filter((r) => !r.isBlocked).length;
    assert.ok(admitted <= 200, `admitted ${admitted}`);
    assert.ok(admitted >= 200 - 2 * batchFor(200), `admitted ${admitted}`);
  });
});
