import { ThrottlerStorageRedisService } from '@nest-lab/throttler-storage-redis';
import type { ThrottlerStorageRecord } from '@nestjs/throttler/dist/throttler-storage-record.interface';
import type Redis from 'ioredis';

type ThrottleReply = [totalHits: number, timeToExpire: number, isBlocked: number, timeToBlockExpire: number];
type WithThrottleCommands = Redis & {
  lgwThrottle(hitKey: string, blockKey: string, name: string, ttl: number, limit: number, blockDuration: number): Promise<ThrottleReply>;
};

/** A limit of at least this many requests per window is counted in batches (see RedisThrottlerStorage). */
export const BATCH_FROM_LIMIT = 200;
/** Batches are 1% of the limit, and never more than this. */
export const MAX_BATCH = 100;
/** How long admitted requests of a quiet database may go uncounted in Redis (they are sent for many databases at once). */
export const REPORT_AFTER_MS = 100;
/** How often ended windows are looked for to drop. */
const SWEEP_EVERY_MS = 10_000;
/**
 * How long a window is kept after it ended: a database back within a minute has its window reset in place (a random
 * tenant of a busy fleet comes back every few seconds; dropped after one second and made anew, its window cost the
 * gateway about 5 % of its CPU), and a busy database's next window knows that it was busy.
 */
const KEEP_MS = 60_000;

/** How many requests a replica takes from the shared counter at once under `limit`: 1 (exact) below BATCH_FROM_LIMIT. */
export const batchFor = (limit: number): number => (limit < BATCH_FROM_LIMIT ? 1 : Math.min(MAX_BATCH, Math.floor(limit / 100)));

/** Takes per call of the take script (each is a few Redis commands: one call stays well under a millisecond). */
export const TAKES_PER_CALL = 100;

/**
 * For each database (KEYS: its hit and block keys; ARGV: ttl, limit, report, want), counts `report` requests a
 * replica already admitted, then takes up to `want` more from the window's counter, never past `limit`; answers,
 * four numbers per database: how many were granted, the count after, the window's rest (ms) and whether the database
 * is blocked. The same keys as the exact script, so replicas counting either way share one count. Many databases per
 * call: a quiet fleet's counts cost Redis one script call per pipeline, not one per database.
 */
const TAKE_SCRIPT = `
local out = {}
for i = 1, #KEYS / 2 do
  local hitKey = KEYS[2 * i - 1]
  local blockKey = KEYS[2 * i]
  local ttl = tonumber(ARGV[4 * i - 3])
  local limit = tonumber(ARGV[4 * i - 2])
  local report = tonumber(ARGV[4 * i - 1])
  local want = tonumber(ARGV[4 * i])
  local total = tonumber(redis.call('GET', hitKey) or '0')
  if report > 0 then total = redis.call('INCRBY', hitKey, report) end
  local blocked = redis.call('EXISTS', blockKey)
  local granted = 0
  if blocked == 0 then granted = math.max(0, math.min(want, limit - total)) end
  if granted > 0 then total = redis.call('INCRBY', hitKey, granted) end
  local timeToExpire = redis.call('PTTL', hitKey)
  if timeToExpire < 0 and total > 0 then
    redis.call('PEXPIRE', hitKey, ttl)
    timeToExpire = ttl
  end
  out[4 * i - 3] = granted
  out[4 * i - 2] = total
  out[4 * i - 1] = timeToExpire
  out[4 * i] = blocked
end
return out
`;

/** The Redis keys of a counter: @nest-lab/throttler-storage-redis's, so the exact script and the take script share them. */
const counterKeys = (key: string, name: string) => ({ hitKey: `{${key}:${name}}:hits`, blockKey: `{${key}:${name}}:blocked` });

/**
 * This replica's view of one database's window. One object per counter for as long as the replica keeps it (reset in
 * place when a window ends), holding what would otherwise be looked up per request in maps of every database.
 */
interface Window {
  hitKey: string;
  blockKey: string;
  ttl: number;
  limit: number;
  /** Requests taken from the shared counter (already counted there) and not used yet. */
  credit: number;
  /** Requests this replica may still admit before the counter has heard of them (see RedisThrottlerStorage). */
  optimistic: number;
  /** The counter's value when last heard, and the requests admitted here since. */
  known: number;
  used: number;
  /** When the window ends (ms since the epoch). */
  endsAt: number;
  /** Whether the database was at half its limit or blocked when last heard: its next window starts with no optimistic credit. */
  busy: boolean;
  /** Admitted requests not yet counted in Redis (sent within REPORT_AFTER_MS). */
  unreported: number;
  /** The batch being taken for it, which concurrent requests wait for. */
  taking?: Promise<boolean>;
}

/**
 * One database's part of a take script call, waiting to go out with others. `done` is called with the script's reply
 * and where this database's four numbers start in it (granted, the count after, the window's rest in ms, blocked);
 * a report (no `done`) is applied to its window as it is.
 */
interface Take {
  w: Window;
  report: number;
  want: number;
  done?: (err: unknown, reply?: number[], at?: number) => void;
}

/**
 * The rate-limit counters in Redis, shared by every replica: @nest-lab/throttler-storage-redis's Lua script and keys,
 * sent as EVALSHA (the library sends the whole script with every request as EVAL).
 *
 * Limits of BATCH_FROM_LIMIT or more per window (the default, 1,000 a second, is one) cost no Redis round trip per
 * request (docs/configuration.md, RATE_LIMIT_*):
 *  - A database this replica last saw far below its limit (under half of it, not blocked) or has not seen starts a
 *    window with an optimistic credit of 1% of the limit (at most MAX_BATCH): those requests are admitted at once and
 *    counted in Redis within REPORT_AFTER_MS, together with every other database's: one script call for every
 *    TAKES_PER_CALL databases, all in one pipeline.
 *  - Past that credit, a replica takes 1% of the limit from the counter at once (reserved: counted before use) and
 *    admits that many locally; takes of many databases also go out together.
 *  - A database that reached half its limit starts its next window without optimistic credit, so a database near or
 *    at its limit is counted as before: never past the limit by reserved credit, and once the window is used up the
 *    exact script blocks and answers Retry-After.
 * So a database may get at most one optimistic credit (1% of its limit) per replica per window more than its limit,
 * and only in a window it entered quiet on that replica. Smaller limits are counted exactly, one round trip per request.
 */
export class RedisThrottlerStorage extends ThrottlerStorageRedisService {
  private readonly client: WithThrottleCommands;
  /** Windows by throttler name, then by key. */
  private readonly windows = new Map<string, Map<string, Window>>();
  /** Windows with admitted requests not yet counted in Redis (a window may appear twice: see sendReports). */
  private reporting: Window[] = [];
  private takes: Take[] = [];
  private reportTimer?: NodeJS.Timeout;
  private takeSha?: string;
  private sweptAt = Date.now();

  constructor(client: Redis) {
    super(client);
    client.defineCommand('lgwThrottle', { numberOfKeys: 2, lua: this.scriptSrc });
    this.client = client as WithThrottleCommands;
  }

  override async increment(
    key: string,
    ttl: number,
    limit: number,
    blockDuration: number,
    throttlerName: string,
  ): Promise<ThrottlerStorageRecord> {
    const n = batchFor(limit);
    // Concurrent requests wait for the batch one of them is taking, then use it. Each pass either admits the request
    // or takes a batch off the window, so this ends when the window is used up at the latest.
    while (n > 1) {
      const now = Date.now();
      const w = this.windowOf(key, throttlerName, ttl, limit, n, now);
      if (w.credit > 0) w.credit--;
      else if (w.optimistic > 0) {
        w.optimistic--;
        this.noteAdmitted(w);
      } else {
        w.taking ??= this.takeBatch(w, n).finally(() => (w.taking = undefined));
        if (!(await w.taking)) break; // the window is used up: the exact check answers (and blocks)
        continue;
      }
      w.used++;
      return {
        totalHits: Math.min(limit, w.known + w.used),
        timeToExpire: Math.ceil((w.endsAt - now) / 1000),
        isBlocked: false,
        timeToBlockExpire: 0,
      };
    }
    const { hitKey, blockKey } = counterKeys(key, throttlerName);
    return this.exact(hitKey, blockKey, throttlerName, ttl, limit, blockDuration);
  }

  /** The counter's current window on this replica: a new one, or the last one reset in place once it ended. */
  private windowOf(key: string, name: string, ttl: number, limit: number, n: number, now: number): Window {
    let byKey = this.windows.get(name);
    if (!byKey) this.windows.set(name, (byKey = new Map()));
    let w = byKey.get(key);
    if (!w) {
      const { hitKey, blockKey } = counterKeys(key, name);
      w = {
        hitKey,
        blockKey,
        ttl,
        limit,
        credit: 0,
        optimistic: n,
        known: 0,
        used: 0,
        endsAt: now + ttl,
        busy: false,
        unreported: 0,
      };
      byKey.set(key, w);
    } else if (w.endsAt <= now) {
      // What was admitted in the ended window and not yet reported stays in `unreported`, sent as before.
      w.ttl = ttl;
      w.limit = limit;
      w.credit = 0;
      w.optimistic = w.busy ? 0 : n;
      w.known = 0;
      w.used = 0;
      w.endsAt = now + ttl;
    }
    if (now - this.sweptAt > SWEEP_EVERY_MS) this.dropEnded(now);
    return w;
  }

  /** Counts an optimistically admitted request, to be sent with the next pipeline (within REPORT_AFTER_MS). */
  private noteAdmitted(w: Window): void {
    if (w.unreported++ === 0) this.reporting.push(w);
    if (!this.reportTimer) {
      this.reportTimer = setTimeout(() => {
        this.reportTimer = undefined;
        this.sendReports();
      }, REPORT_AFTER_MS);
      this.reportTimer.unref();
    }
  }

  /**
   * Sends every database's admitted-but-uncounted requests (no new credit asked for). A window whose requests a batch
   * take carried meanwhile has none left and is skipped, so one listed twice is reported once.
   */
  private sendReports(): void {
    const windows = this.reporting;
    this.reporting = [];
    // No closure per report: a fleet's random tenants make one report per request.
    for (const w of windows) if (w.unreported > 0) this.take(w, 0);
  }

  /** Takes a batch (and reports what was admitted meanwhile); false when the window has none left. */
  private takeBatch(w: Window, n: number): Promise<boolean> {
    return new Promise((resolve, reject) =>
      this.take(w, n, (err, reply, at) => (err ? reject(err) : resolve(this.heard(w, reply!, at!, n) > 0))),
    );
  }

  /** Applies what the counter answered (the four numbers at `at` in `reply`); returns the credit granted. */
  private heard(w: Window, reply: number[], at: number, want: number): number {
    const granted = reply[at];
    const total = reply[at + 1];
    const timeToExpire = reply[at + 2];
    const blocked = reply[at + 3];
    w.known = total;
    w.used = 0;
    w.credit += granted;
    w.busy = blocked === 1 || total >= w.limit / 2;
    if (w.busy) w.optimistic = 0;
    if (timeToExpire > 0) w.endsAt = Date.now() + timeToExpire;
    if (want > 0 && granted <= 0) w.credit = 0;
    return granted;
  }

  /** One database's take, sent with whatever other takes are waiting (next tick): TAKES_PER_CALL per script call. */
  private take(w: Window, want: number, done?: Take['done']): void {
    const report = w.unreported;
    w.unreported = 0;
    if (this.takes.length === 0) setImmediate(() => void this.sendTakes());
    this.takes.push({ w, report, want, done });
  }

  /** A take's answer: a report not counted goes back to its window for the next pipeline (Redis away: served fail-open meanwhile). */
  private settle(t: Take, err: unknown, reply?: number[], at = 0): void {
    if (err && t.report > 0) {
      if (t.w.unreported === 0) this.reporting.push(t.w);
      t.w.unreported += t.report;
    }
    if (t.done) t.done(err, reply, at);
    else if (!err) this.heard(t.w, reply!, at, 0);
  }

  private async sendTakes(): Promise<void> {
    const takes = this.takes;
    this.takes = [];
    const calls: Take[][] = [];
    for (let i = 0; i < takes.length; i += TAKES_PER_CALL) calls.push(takes.slice(i, i + TAKES_PER_CALL));
    try {
      this.takeSha ??= (await this.client.script('LOAD', TAKE_SCRIPT)) as string;
      const pipeline = this.client.pipeline();
      for (const call of calls) {
        const keys: string[] = [];
        const args: number[] = [];
        for (const { w, report, want } of call) {
          keys.push(w.hitKey, w.blockKey);
          args.push(w.ttl, w.limit, report, want);
        }
        pipeline.evalsha(this.takeSha, keys.length, ...keys, ...args);
      }
      const replies = (await pipeline.exec()) ?? [];
      calls.forEach((call, c) => {
        const [err, r] = replies[c] ?? [new Error('no reply')];
        if (err) {
          // NOSCRIPT (Redis restarted and lost its scripts): load it again at the next pipeline.
          if (/NOSCRIPT/.test(String((err as Error).message))) this.takeSha = undefined;
          for (const t of call) this.settle(t, err);
          return;
        }
        if (!Array.isArray(r) || r.length !== 4 * call.length || r.some((v) => typeof v !== 'number')) {
          const bad = new TypeError(`unexpected rate-limit script reply: ${JSON.stringify(r).slice(0, 200)}`);
          for (const t of call) this.settle(t, bad);
          return;
        }
        call.forEach((t, i) => this.settle(t, null, r as number[], 4 * i));
      });
    } catch (err) {
      this.takeSha = undefined;
      for (const t of takes) this.settle(t, err);
    }
  }

  /** Drops the windows that ended over KEEP_MS ago (memory bounded by the databases active lately; swept as requests come). */
  private dropEnded(now: number): void {
    this.sweptAt = now;
    for (const byKey of this.windows.values()) {
      for (const [k, w] of byKey) if (w.endsAt + KEEP_MS <= now && w.unreported === 0 && !w.taking) byKey.delete(k);
    }
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
