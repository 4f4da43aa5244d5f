import { LRUCache } from 'lru-cache';

/** What an entry costs besides its key and value: the cache's map entry and per-slot arrays (an estimate). */
const ENTRY_OVERHEAD_BYTES = 96;

/**
 * A cache of per-table hints (where a table was last found, whether its versions are catalog-managed, its last
 * measured footprint, when its maintenance was last queued, credentials vended for it): least recently used out
 * first, bounded by the memory its entries are estimated to take (TABLE_HINT_CACHE_BYTES, each cache) instead of a
 * count, so a fleet of many tables keeps as many as fit (about 30,000 small ones in 8 MiB). A miss costs only what
 * the hint saves: a catalog lookup, a statistics read, a round trip. `valueBytes`: a value's estimated size; keys are
 * counted at a byte a character (V8 keeps ASCII strings so). 0 bytes: nothing is kept.
 */
export function hintCache<V extends object | string | number | boolean>(
  maxBytes: number,
  valueBytes: (value: V) => number = () => 16,
): LRUCache<string, V> {
  return new LRUCache<string, V>({
    maxSize: Math.max(maxBytes, 1),
    sizeCalculation: (value, key) => ENTRY_OVERHEAD_BYTES + key.length + valueBytes(value),
  });
}
