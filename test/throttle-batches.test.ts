import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import Redis from 'ioredis';
import { batchFor, RedisThrottlerStorage } from '../src/modules/throttling/redis-throttler.storage';
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

  it('takes 1% of a large limit per round trip', async () => {
    assert.equal(batchFor(1000), 10);
    assert.equal(batchFor(1_000_000), 100);
    const s = new RedisThrottlerStorage(a);
    const key = fresh();
    for (let i = 0; i < 55; i++) assert.equal((await s.increment(key, 60_000, 1000, 60_000, 'database')).isBlocked, false);
    assert.equal(await hits(a, key), 60, 'six batches of 10 taken for 55 requests');
    // Concurrent requests share the batch being taken instead of each taking one.
    const key2 = fresh();
    await Promise.all(Array.from({ length: 10 }, () => s.increment(key2, 60_000, 1000, 60_000, 'database')));
    assert.equal(await hits(a, key2), 10);
  });

  it('never lets two replicas through more than the limit together, and blocks after it', async () => {
    const ra = new RedisThrottlerStorage(a);
    const rb = new RedisThrottlerStorage(b);
    const key = fresh();
    const results = await Promise.all(
      Array.from({ length: 1300 }, (_, i) => (i % 2 ? ra : rb).increment(key, 60_000, 1000, 60_000, 'database')),
    );
    const admitted = results.filter((r) => !r.isBlocked).length;
    assert.ok(admitted <= 1000, `admitted ${admitted}`);
    assert.ok(admitted >= 1000 - 2 * batchFor(1000), `admitted ${admitted}`);
    const last = await ra.increment(key, 60_000, 1000, 60_000, 'database');
    assert.equal(last.isBlocked, true);
    assert.ok(last.timeToBlockExpire > 0);
  });
});
