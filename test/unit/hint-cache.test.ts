import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { loadConfig } from '../../src/platform/config/config';
import { hintCache } from '../../src/platform/runtime/hint-cache';

describe('per-table hint caches: bounded by memory, not by a count (issue 37)', () => {
  test('the default budget keeps far more than 10,000 tables, within its bytes', () => {
    const bytes = loadConfig({}).tableHintCacheBytes;
    assert.equal(bytes, 8 * 1024 ** 2);
    const cache = hintCache<string>(bytes, (v) => v.length);
    for (let i = 0; i < 30_000; i++) cache.set(`db-${i}\u0000\u0000ns$t${i}`, `tables/ns/${i}.lance`);
    assert.equal(cache.size, 30_000, 'a fleet of 30,000 queried tables fits in 8 MiB');
    assert.ok(cache.calculatedSize <= bytes);
    assert.equal(cache.get('db-0\u0000\u0000ns$t0'), 'tables/ns/0.lance');
  });

  test('past the budget the least recently used go first, and the size stays within it', () => {
    const cache = hintCache<number>(64 * 1024, () => 8);
    for (let i = 0; i < 5_000; i++) {
      cache.set(`table-${i}`, i);
      cache.get('table-0'); // kept in use
    }
    assert.ok(cache.calculatedSize <= 64 * 1024, `${cache.calculatedSize}`);
    assert.ok(cache.size > 100 && cache.size < 5_000, `${cache.size}`);
    assert.equal(cache.get('table-0'), 0, 'the one in use stays');
    assert.equal(cache.get('table-1'), undefined, 'an old one left');
    assert.equal(cache.get('table-4999'), 4999);
  });

  test('larger values take more of the budget; 0 bytes keeps nothing', () => {
    const big = hintCache<string>(64 * 1024, (v) => v.length);
    for (let i = 0; i < 1_000; i++) big.set(`k${i}`, 'x'.repeat(1_000));
    assert.ok(big.size < 70, `${big.size} entries of 1 KB in 64 KiB`);
    const none = hintCache<number>(0);
    none.set('a', 1);
    assert.equal(none.get('a'), undefined);
    assert.equal(none.size, 0);
  });

  test('TABLE_HINT_CACHE_BYTES sets it, and refuses what is not a byte count', () => {
    assert.equal(loadConfig({ TABLE_HINT_CACHE_BYTES: '0' }).tableHintCacheBytes, 0);
    assert.equal(loadConfig({ TABLE_HINT_CACHE_BYTES: '1048576' }).tableHintCacheBytes, 1048576);
    assert.throws(() => loadConfig({ TABLE_HINT_CACHE_BYTES: 'lots' }), /TABLE_HINT_CACHE_BYTES/);
  });
});
