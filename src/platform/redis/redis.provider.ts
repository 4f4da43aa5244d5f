import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import Redis from 'ioredis';
import { APP_CONFIG, AppConfig } from '../config/config';

/**
 * The Redis connection for rate-limit counters (REDIS_URL), tuned so that no request ever waits on Redis: no
 * offline queue (a command while disconnected fails at once), no per-command retries, short connect and command
 * timeouts; ioredis keeps reconnecting in the background and the gateway recovers by itself.
 */
@Injectable()
export class RedisConnection implements OnModuleInit, OnApplicationShutdown {
  readonly client?: Redis;
  private readonly log = new Logger('Redis');
  private lastState = 'connecting';
  /** Rate-limit checks answered without Redis (fail-open), since start. */
  failOpenCount = 0;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    if (!config.redisUrl) return;
    this.client = new Redis(config.redisUrl, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      connectTimeout: config.redisTimeoutMs * 4,
      commandTimeout: config.redisTimeoutMs,
      retryStrategy: (attempt) => Math.min(attempt * 100, 2000),
      lazyConnect: false,
      // Commands issued in the same tick (rate-limit checks of concurrent requests) leave in one write and their
      // replies come back in one read: fewer system calls per request under load.
      enableAutoPipelining: true,
    });
    this.client.on('ready', () => this.transition('ready'));
    this.client.on('end', () => this.transition('end'));
    this.client.on('error', (err) => this.transition('error', err.message));
  }

  /**
   * Waits, at start, up to the connect timeout for the connection: requests served before it is up would all be
   * unthrottled (fail-open). If Redis is not there by then, the gateway starts anyway and degrades as it would later.
   */
  async onModuleInit(): Promise<void> {
    const client = this.client;
    if (!client || client.status === 'ready') return;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        client.off('ready', done);
        resolve();
      };
      const timer = setTimeout(done, this.config.redisTimeoutMs * 4);
      client.once('ready', done);
    });
  }

  get status(): 'none' | 'ready' | 'down' {
    if (!this.client) return 'none';
    return this.client.status === 'ready' ? 'ready' : 'down';
  }

  private transition(state: string, detail?: string) {
    if (state === this.lastState) return;
    this.lastState = state;
    if (state === 'ready') this.log.log('connected');
    else this.log.warn(`unavailable (${state}${detail ? `: ${detail}` : ''}); rate limiting degrades until it returns`);
  }

  onApplicationShutdown(): void {
    this.client?.disconnect(false);
  }
}
