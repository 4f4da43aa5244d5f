import { Controller, Get } from '@nestjs/common';
import { Errors } from '../../platform/http/errors';
import { LivenessResponse, ReadinessResponse } from './health.schemas';
import { Operation } from '../../platform/http/operation.decorator';
import { RedisConnection } from '../../platform/redis/redis.provider';
import { HealthRepository } from './health.repository';
import { TableStorage } from '../../engine/storage/table-storage.service';

const READY_TIMEOUT_MS = 2000;
/** How long stores found answering are taken as answering, so readiness polling does not become steady store traffic. */
const STORE_PROBE_FRESH_MS = 5000;

type StoreProblems = Record<string, string | null>;

/** Liveness (no I/O) and readiness (the catalog database answers). Never authenticated, never throttled. */
@Controller()
export class HealthController {
  constructor(
    private readonly repo: HealthRepository,
    private readonly redis: RedisConnection,
    private readonly storage: TableStorage,
  ) {}

  private lastProbe?: { result: Promise<StoreProblems>; startedAt: number; answeredAt?: number };

  @Get('healthz')
  @Operation({
    operationId: 'Liveness',
    summary: 'Liveness',
    description: 'No I/O. Never authenticated, never throttled.',
    tag: 'Health',
    access: 'public',
    responses: { 200: { description: 'Alive', schema: LivenessResponse } },
    errors: [],
  })
  live() {
    return { status: 'ok' } as const;
  }

  @Get('readyz')
  @Operation({
    operationId: 'Readiness',
    summary: 'Readiness',
    description:
      "503 while the catalog database or a storage profile's store does not answer (stores found answering are not asked " +
      `again for ${STORE_PROBE_FRESH_MS / 1000} s). Never authenticated, never throttled.`,
    tag: 'Health',
    access: 'public',
    responses: { 200: { description: 'Ready', schema: ReadinessResponse } },
    errors: [503],
  })
  async ready() {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('timed out')), READY_TIMEOUT_MS);
    });
    try {
      try {
        await Promise.race([this.repo.ping(), timeout]);
      } catch (err) {
        throw Errors.serviceUnavailable(`catalog database unavailable: ${(err as Error).message}`);
      }
      // Every profile's store must answer (a wrong bucket or endpoint is found here, not at the first write).
      let problems: Record<string, string | null>;
      try {
        problems = await Promise.race([this.probeStores(), timeout]);
      } catch (err) {
        throw Errors.serviceUnavailable(`table storage unavailable: ${(err as Error).message}`);
      }
      const bad = Object.entries(problems).filter(([, p]) => p !== null);
      if (bad.length)
        throw Errors.serviceUnavailable(`table storage unavailable: ${bad.map(([n, p]) => `profile '${n}': ${p}`).join('; ')}`);
      // Redis only degrades rate limiting (fail-open by default): reported, but it does not make us unready.
      return { status: 'ready', catalog: 'up', storage: 'up', redis: this.redis.status } as const;
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
    if (last && (last.answeredAt !== undefined ? now - last.answeredAt < STORE_PROBE_FRESH_MS : now - last.startedAt < READY_TIMEOUT_MS)) {
      return last.result;
    }
    const probe: NonNullable<HealthController['lastProbe']> = { result: this.storage.probe(), startedAt: now };
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
