import { Controller, Get } from '@nestjs/common';
import { Errors } from '../../common/errors';
import { LivenessResponse, ReadinessResponse } from '../../common/response-schemas';
import { Operation } from '../openapi/operation.decorator';
import { RedisConnection } from '../../redis/redis.provider';
import { HealthRepository } from './health.repository';

const READY_TIMEOUT_MS = 2000;

/** Liveness (no I/O) and readiness (the catalog database answers). Never authenticated, never throttled. */
@Controller()
export class HealthController {
  constructor(
    private readonly repo: HealthRepository,
    private readonly redis: RedisConnection,
  ) {}

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
    description: '503 while the catalog database does not answer. Never authenticated, never throttled.',
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
      await Promise.race([this.repo.ping(), timeout]);
      // Redis only degrades rate limiting (fail-open by default): reported, but it does not make us unready.
      return { status: 'ready', catalog: 'up', redis: this.redis.status } as const;
    } catch (err) {
      throw Errors.serviceUnavailable(`catalog database unavailable: ${(err as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
  }
}
