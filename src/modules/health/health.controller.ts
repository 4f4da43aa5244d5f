import { Controller, Get, HttpCode } from '@nestjs/common';
import { Errors } from '../../common/errors';
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
  @HttpCode(200)
  live() {
    return { status: 'ok' };
  }

  @Get('readyz')
  async ready() {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('timed out')), READY_TIMEOUT_MS);
    });
    try {
      await Promise.race([this.repo.ping(), timeout]);
      // Redis only degrades rate limiting (fail-open by default): reported, but it does not make us unready.
      return { status: 'ready', catalog: 'up', redis: this.redis.status };
    } catch (err) {
      throw Errors.serviceUnavailable(`catalog database unavailable: ${(err as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
  }
}
