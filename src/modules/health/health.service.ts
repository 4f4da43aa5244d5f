import { Injectable } from '@nestjs/common';
import { TableStorage } from '../../engine/storage/table-storage.service';
import { RedisConnection } from '../../platform/redis/redis.provider';
import { HealthRepository } from './health.repository';

/** How long a health check waits for the catalog and the stores, together. */
export const HEALTH_TIMEOUT_MS = 2000;
/** How long stores found answering are taken as answering, so health polling does not become steady store traffic. */
export const STORE_PROBE_FRESH_MS = 5000;

/** Profile name → null when its store answers, else what is wrong. */
export type StoreProblems = Record<string, string | null>;

export interface HealthState {
  catalog: { status: 'up' | 'down'; latencyMs: number; error?: string };
  /** Every profile's store; a probe that did not answer in time reports every profile 'timed out'. */
  stores: StoreProblems;
  redis: 'ready' | 'down' | 'none';
}

/**
 * Credentials an error text might carry, cut out before it is shown: a URL's user:password, and query parameters
 * that sign or authenticate (SAS tokens, presigned URLs). The stores' probes already keep only a short form.
 */
export function withoutCredentials(text: string): string {
  return text
    .replace(/(\b[a-z][a-z0-9+.-]*:\/\/)[^/\s@]*@/gi, '$1***@')
    .replace(/([?&](?:sig|signature|x-amz-[a-z-]+|token|access_token|password|secret|key|se|sp|sv)=)[^&\s]*/gi, '$1***')
    .slice(0, 300);
}

/**
 * The checks behind /readyz and the operator's /admin/v1/health: the catalog database answering (with its latency),
 * every storage profile's store answering, and the Redis connection's state, all within HEALTH_TIMEOUT_MS.
 */
@Injectable()
export class HealthService {
  private lastProbe?: { result: Promise<StoreProblems>; startedAt: number; answeredAt?: number };

  constructor(
    private readonly repo: HealthRepository,
    private readonly redis: RedisConnection,
    private readonly storage: TableStorage,
  ) {}

  /** The catalog, the stores (concurrently) and Redis; never longer than HEALTH_TIMEOUT_MS, never throws. */
  async check(): Promise<HealthState> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('timed out')), HEALTH_TIMEOUT_MS);
    });
    timeout.catch(() => undefined);
    const started = performance.now();
    const ms = () => Math.round((performance.now() - started) * 100) / 100;
    const catalog = Promise.race([this.repo.ping(), timeout]).then(
      () => ({ status: 'up' as const, latencyMs: ms() }),
      (err: unknown) => ({ status: 'down' as const, latencyMs: ms(), error: withoutCredentials((err as Error).message) }),
    );
    const stores = Promise.race([this.probeStores(), timeout]).then(
      (problems) => Object.fromEntries(Object.entries(problems).map(([n, p]) => [n, p === null ? null : withoutCredentials(p)])),
      (err: unknown) => {
        const problem = withoutCredentials((err as Error).message);
        return Object.fromEntries(this.storage.profiles().map((p) => [p.name, problem]));
      },
    );
    try {
      return { catalog: await catalog, stores: await stores, redis: this.redis.status };
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * The stores' probe, shared: a probe that found every store answering stands for STORE_PROBE_FRESH_MS, and one in
   * flight is joined by the checks that come meanwhile (until it is older than a check may wait). A probe that found
   * a store failing is not kept, so the next check asks again and a recovered store is seen at once.
   */
  private probeStores(): Promise<StoreProblems> {
    const now = Date.now();
    const last = this.lastProbe;
    if (last && (last.answeredAt !== undefined ? now - last.answeredAt < STORE_PROBE_FRESH_MS : now - last.startedAt < HEALTH_TIMEOUT_MS)) {
      return last.result;
    }
    const probe: NonNullable<HealthService['lastProbe']> = { result: this.storage.probe(), startedAt: now };
    this.lastProbe = probe;
    const forget = () => {
      if (this.lastProbe === probe) this.lastProbe = undefined;
    };
    probe.result.then((problems) => {
      if (Object.values(problems).every((p) => p === null)) probe.answeredAt = Date.now();
      else forget();
    }, forget);
    return probe.result;
  }
}
