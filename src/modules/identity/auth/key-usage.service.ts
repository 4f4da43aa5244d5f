import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../../../platform/config/config';
import { ApiKeysRepository } from './api-keys.repository';

/** Keys per UPDATE of a flush (a replica of a large fleet may have used tens of thousands in a period). */
const KEY_FLUSH_CHUNK = 1000;

/**
 * When each API key was last used (`last_used_at`), at no catalog cost on the request path: a use is noted in
 * memory, and every KEY_USAGE_FLUSH_MS (and on shutdown) the replica writes what it noted in batched UPDATEs (up to
 * KEY_FLUSH_CHUNK keys each, its own short transaction) that only move last_used_at forward (`greatest`), so
 * replicas flushing in any order agree; each UPDATE locks its rows in id order (ApiKeysRepository.touch), so two
 * replicas' flushes never deadlock. Coarse by design: a use shows up to one flush period late, and the uses of the
 * last period are lost should the process die abruptly.
 */
@Injectable()
export class KeyUsage implements OnModuleInit, BeforeApplicationShutdown {
  private readonly log = new Logger('KeyUsage');
  private pending = new Map<string, number>();
  private timer?: NodeJS.Timeout;
  private flushing?: Promise<void>;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly keys: ApiKeysRepository,
  ) {}

  onModuleInit(): void {
    this.timer = setInterval(() => void this.flush(), this.config.keyUsageFlushMs);
    this.timer.unref();
  }

  async beforeApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  /** Notes a use of the key now (in memory only). */
  record(id: string): void {
    this.pending.set(id, Date.now());
  }

  /** Writes the uses noted since the last flush; a failed write keeps them for the next one. */
  flush(): Promise<void> {
    if (this.flushing) return this.flushing;
    if (this.pending.size === 0) return Promise.resolve();
    const batch = this.pending;
    this.pending = new Map();
    this.flushing = this.write(batch)
      .catch((err: Error) => {
        for (const [id, t] of batch) if ((this.pending.get(id) ?? 0) < t) this.pending.set(id, t);
        this.log.warn(`could not record API key usage (${batch.size} keys; retried at the next flush): ${err.message}`);
      })
      .finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  private async write(batch: Map<string, number>): Promise<void> {
    const uses = [...batch].map(([id, t]) => ({ id, at: new Date(t) }));
    for (let i = 0; i < uses.length; i += KEY_FLUSH_CHUNK) await this.keys.touch(uses.slice(i, i + KEY_FLUSH_CHUNK));
  }
}
