import { LRUCache } from 'lru-cache';
import type { AppConfig } from '../../../platform/config/config';

/** Lookups of unknown credentials are kept this long at most, so sprayed guesses cannot crowd out real entries. */
export const NEGATIVE_TTL_MS = 1000;

/**
 * A lookup cache of the identity feature (key lookups, databases by name): entries live AUTH_CACHE_TTL_MS unless a
 * change announced through cache_invalidations removes them sooner, and together the caches hold at most
 * AUTH_CACHE_MAX_MB, each its `share` of it, measured with `sizeOf` (an estimate of an entry's heap bytes). Expired
 * entries are purged by IdentityCacheSync's rounds (one sweep every few seconds rather than a timer per entry), so a
 * replica that touched many tenants once gives the memory back. undefined when AUTH_CACHE_TTL_MS is 0 (every request
 * looks up for itself).
 */
export function lookupCache<V extends object>(config: AppConfig, share: number, sizeOf: (v: V) => number): LRUCache<string, V> | undefined {
  if (config.authCacheTtlMs <= 0) return undefined;
  return new LRUCache<string, V>({
    ttl: config.authCacheTtlMs,
    maxSize: Math.max(64 * 1024, Math.floor(config.authCacheMaxBytes * share)),
    sizeCalculation: (v) => Math.max(1, Math.ceil(sizeOf(v))),
  });
}

/** Rough heap bytes of a string (UTF-16 in the worst case) or an absent value. */
export const strBytes = (s: string | null | undefined): number => (s ? 40 + 2 * s.length : 8);

/** Drops a cache's expired entries; the estimated bytes they held (0 for no cache). */
export function purged<V extends object>(cache: LRUCache<string, V> | undefined): number {
  if (!cache) return 0;
  const before = cache.calculatedSize ?? 0;
  cache.purgeStale();
  return before - (cache.calculatedSize ?? 0);
}
