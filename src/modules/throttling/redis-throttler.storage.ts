import { ThrottlerStorageRedisService } from '@nest-lab/throttler-storage-redis';
import type { ThrottlerStorageRecord } from '@nestjs/throttler/dist/throttler-storage-record.interface';
import type Redis from 'ioredis';

type ThrottleReply = [totalHits: number, timeToExpire: number, isBlocked: number, timeToBlockExpire: number];
type WithThrottleCommands = Redis & {
  lgwThrottle(hitKey: string, blockKey: string, name: string, ttl: number, limit: number, blockDuration: number): Promise<ThrottleReply>;
  lgwThrottleBatch(
    hitKey: string,
    blockKey: string,
    ttl: number,
    limit: number,
    n: number,
  ): Promise<[granted: number, totalHits: number, timeToExpire: number]>;
};

/** A limit of at least this many requests per window is counted in batches (see RedisThrottlerStorage). */
export const BATCH_FROM_LIMIT = 200;
/** Batches are 1% of the limit, and never more than this. */
export const MAX_BATCH = 100;

/** How many requests a replica takes from the shared counter at once under `limit`: 1 (exact) below BATCH_FROM_LIMIT. */
export const batchFor = (limit: number): number => (limit < BATCH_FROM_LIMIT ? 1 : Math.min(MAX_BATCH, Math.floor(limit / 100)));

/**
 * Takes up to `n` requests from a window's counter, never past `limit`: answers how many were granted (0 when the
 * window is used up, which the next exact check turns into a block), the count after, and the window's rest (ms).
 * The same keys as the exact script, so replicas counting either way share one count.
 */
const BATCH_SCRIPT = `
local hitKey = KEYS[1]
local blockKey = KEYS[2]
local ttl = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local n = tonumber(ARGV[3])
if redis.call('EXISTS', blockKey) == 1 then return {0, 0, 0} end
local before = tonumber(redis.call('GET', hitKey) or '0')
local granted = math.max(0, math.min(n, limit - before))
local total = before
if granted > 0 then total = redis.call('INCRBY', hitKey, granted) end
local timeToExpire = redis.call('PTTL', hitKey)
if timeToExpire <= 0 and granted > 0 then
  redis.call('PEXPIRE', hitKey, ttl)
  timeToExpire = ttl
end
return {granted, total, timeToExpire}
`;

interface Batch {
  /** Requests of the batch not yet used. */
  left: number;
  /** The counter's value when the batch was taken (it includes the whole batch). */
  total: number;
  /** When the window the batch was taken from ends (ms since the epoch). */
  endsAt: number;
}

/**
 * The rate-limit counters in Redis, shared by every replica: @nest-lab/throttler-storage-redis's Lua script and keys,
 * sent as EVALSHA (the library sends the whole script with every request as EVAL).
 *
 * Limits of BATCH_FROM_LIMIT or more per window are counted in batches: a replica takes 1% of the limit (at most
 * MAX_BATCH) from the counter in one round trip and admits that many requests locally until the batch or the window
 * ends, so a busy database costs Redis one round trip per batch instead of one per request. A batch is never taken
 * past the limit, so a database is never let through more than its limit across all replicas; it may be refused a
 * little early (requests a replica took but did not use when the window ended, at most one batch per replica). Once
 * a window is used up, requests go through the exact script, which blocks and answers Retry-After as before.
 * Smaller limits are counted exactly, one round trip per request.
 */
export class RedisThrottlerStorage extends ThrottlerStorageRedisService {
  private readonly client: WithThrottleCommands;
  private readonly batches = new Map<string, Batch>();
  private readonly taking = new Map<string, Promise<Batch | undefined>>();

  constructor(client: Redis) {
    super(client);
    client.defineCommand('lgwThrottle', { numberOfKeys: 2, lua: this.scriptSrc });
    client.defineCommand('lgwThrottleBatch', { numberOfKeys: 2, lua: BATCH_SCRIPT });
    this.client = client as WithThrottleCommands;
  }

  override async increment(
    key: string,
    ttl: number,
    limit: number,
    blockDuration: number,
    throttlerName: string,
  ): Promise<ThrottlerStorageRecord> {
    const hitKey = `{${key}:${throttlerName}}:hits`;
    const blockKey = `{${key}:${throttlerName}}:blocked`;
    const n = batchFor(limit);
    // Concurrent requests wait for the batch one of them is taking, then use it. Each pass either admits the request
    // or takes a batch off the window, so this ends when the window is used up at the latest.
    while (n > 1) {
      const b = this.batches.get(hitKey);
      if (b && b.left > 0 && b.endsAt > Date.now()) {
        b.left--;
        return {
          totalHits: b.total - b.left,
          timeToExpire: Math.ceil((b.endsAt - Date.now()) / 1000),
          isBlocked: false,
          timeToBlockExpire: 0,
        };
      }
      let taking = this.taking.get(hitKey);
      if (!taking) {
        taking = this.takeBatch(hitKey, blockKey, ttl, limit, n).finally(() => this.taking.delete(hitKey));
        this.taking.set(hitKey, taking);
      }
      if (!(await taking)) break; // the window is used up: the exact check answers (and blocks)
    }
    return this.exact(hitKey, blockKey, throttlerName, ttl, limit, blockDuration);
  }

  /** A new batch from the counter, or undefined when the window has none left (then the exact check decides). */
  private async takeBatch(hitKey: string, blockKey: string, ttl: number, limit: number, n: number): Promise<Batch | undefined> {
    const r = await this.client.lgwThrottleBatch(hitKey, blockKey, ttl, limit, n);
    if (!Array.isArray(r) || r.length !== 3 || r.some((v) => typeof v !== 'number')) {
      throw new TypeError(`unexpected rate-limit script reply: ${JSON.stringify(r)}`);
    }
    const [granted, total, timeToExpire] = r;
    if (granted <= 0) {
      this.batches.delete(hitKey);
      return undefined;
    }
    // Counters of databases not seen for a window are dropped as new ones come (bounded by the active databases).
    if (this.batches.size >= 10_000) this.dropEnded();
    const b = { left: granted, total, endsAt: Date.now() + timeToExpire };
    this.batches.set(hitKey, b);
    return b;
  }

  private dropEnded(): void {
    const now = Date.now();
    for (const [k, b] of this.batches) if (b.endsAt <= now || b.left === 0) this.batches.delete(k);
    if (this.batches.size >= 10_000) this.batches.clear();
  }

  private async exact(
    hitKey: string,
    blockKey: string,
    name: string,
    ttl: number,
    limit: number,
    blockDuration: number,
  ): Promise<ThrottlerStorageRecord> {
    const r = await this.client.lgwThrottle(hitKey, blockKey, name, ttl, limit, blockDuration);
    if (!Array.isArray(r) || r.length !== 4 || r.some((v) => typeof v !== 'number')) {
      throw new TypeError(`unexpected rate-limit script reply: ${JSON.stringify(r)}`);
    }
    const [totalHits, timeToExpire, isBlocked, timeToBlockExpire] = r;
    return {
      totalHits,
      timeToExpire: Math.ceil(timeToExpire / 1000),
      isBlocked: isBlocked === 1,
      timeToBlockExpire: Math.ceil(timeToBlockExpire / 1000),
    };
  }
}
