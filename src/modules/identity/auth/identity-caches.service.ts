import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../../../platform/config/config';
import type { CacheExpiry } from '../../../platform/runtime/young-generation-release';
import { CacheInvalidationsRepository } from '../tenancy/cache-invalidations.repository';
import { TenancyService } from '../tenancy/tenancy.service';
import { ApiKeysService } from './api-keys.service';

/** How far back a round reads cache_invalidations: a change whose transaction ran longer than this is caught by the TTL only. */
const LOOK_BACK_SECONDS = 60;
/** Rows older than this are deleted (by whichever replica's round comes first). */
const KEEP_SECONDS = 3600;
/** Expired entries are swept every this many rounds, rows trimmed every TRIM_EVERY rounds. */
const PURGE_EVERY = 10;
const TRIM_EVERY = 600;

type What = { keyId?: string; databaseId?: string };

/**
 * The identity caches across replicas (docs/production.md, "Caches across replicas"). Key lookups and databases by
 * name are cached for AUTH_CACHE_TTL_MS on each replica; what must not wait for that (a key revoked or changed, a
 * database's limits, quotas or network rules changed, a database deleted) is announced in the change's own catalog
 * transaction (a row in cache_invalidations) and every replica reads the rows of the last minute each
 * AUTH_CACHE_SYNC_MS, forgetting what each names once. So a revocation stops a key everywhere within AUTH_CACHE_SYNC_MS
 * (1 s) plus one round's query. A round that cannot read the catalog forgets everything: a replica that cannot hear
 * of changes does not keep answering from what it heard before.
 *
 * Polling rather than LISTEN/NOTIFY or Redis pub/sub: it works through a transaction-mode pooler (which does not
 * keep a LISTEN session), on the embedded catalog, without Redis, and a replica that was away misses nothing of the
 * last minute; its cost is one indexed query a second per replica.
 */
@Injectable()
export class IdentityCaches implements OnModuleInit, BeforeApplicationShutdown, CacheExpiry {
  private readonly log = new Logger('IdentityCaches');
  /** The rows already applied, by seq, until they leave the look-back window. */
  private readonly seen = new Map<string, number>();
  private timer?: NodeJS.Timeout;
  private round?: Promise<void>;
  private rounds = 0;
  private failing = false;
  private readonly expiryListeners: Array<(bytes: number) => void> = [];

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly keys: ApiKeysService,
    private readonly tenancy: TenancyService,
    private readonly invalidations: CacheInvalidationsRepository,
  ) {}

  onModuleInit(): void {
    if (this.config.authCacheTtlMs <= 0) return; // nothing cached, nothing to forget
    this.timer = setInterval(() => void this.sync(), this.config.authCacheSyncMs);
    this.timer.unref();
  }

  async beforeApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.round;
  }

  /** CacheExpiry: `listener` hears the estimated bytes of each purge of expired entries (the heap release, RuntimeModule). */
  onExpired(listener: (bytes: number) => void): void {
    this.expiryListeners.push(listener);
  }

  /**
   * Announces a change of a key or a database to every replica: call it inside the change's unit of work (a
   * rolled-back change announces nothing), then `forget` the same after the commit.
   */
  announce(what: What): Promise<void> {
    return this.invalidations.record(what);
  }

  /** Forgets on this replica what is cached of a key, of a database (its keys and its settings), or everything. */
  forget(what?: What): void {
    this.keys.forget(what);
    if (!what || what.databaseId || !what.keyId) this.tenancy.forget(what?.databaseId);
  }

  /** One round: applies the rows not seen yet (a round already under way is joined). */
  sync(): Promise<void> {
    this.round ??= this.syncOnce().finally(() => (this.round = undefined));
    return this.round;
  }

  private async syncOnce(): Promise<void> {
    const now = Date.now();
    try {
      const rows = await this.invalidations.recent(LOOK_BACK_SECONDS);
      for (const row of rows) {
        if (this.seen.has(row.seq)) continue;
        this.seen.set(row.seq, now + 2 * LOOK_BACK_SECONDS * 1000);
        this.forget({ keyId: row.keyId ?? undefined, databaseId: row.databaseId ?? undefined });
      }
      if (this.failing) this.log.log('cache invalidations readable again');
      this.failing = false;
    } catch (err) {
      if (!this.failing) this.log.warn(`cannot read cache invalidations, forgetting every cached lookup: ${(err as Error).message}`);
      this.failing = true;
      this.forget();
    }
    for (const [seq, until] of this.seen) if (until < now) this.seen.delete(seq);
    this.rounds++;
    if (this.rounds % PURGE_EVERY === 0) {
      const bytes = this.keys.purgeStale() + this.tenancy.purgeStale();
      if (bytes > 0) for (const listener of this.expiryListeners) listener(bytes);
    }
    if (this.rounds % TRIM_EVERY === 0) await this.invalidations.trim(KEEP_SECONDS).catch(() => undefined);
  }
}
