import { Controller, Get } from '@nestjs/common';
import { Errors } from '../../platform/http/errors';
import { LivenessResponse, OperatorHealthReport, ReadinessResponse } from './health.schemas';
import { Operation } from '../../platform/http/operation.decorator';
import { HEALTH_TIMEOUT_MS, HealthService, STORE_PROBE_FRESH_MS } from './health.service';

/** Liveness (no I/O) and readiness (the catalog database answers). Never authenticated, never throttled. */
@Controller()
export class HealthController {
  constructor(private readonly health: HealthService) {}

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
    const state = await this.health.check();
    if (state.catalog.status === 'down') throw Errors.serviceUnavailable(`catalog database unavailable: ${state.catalog.error}`);
    // Every profile's store must answer (a wrong bucket or endpoint is found here, not at the first write).
    const bad = Object.entries(state.stores).filter(([, p]) => p !== null);
    if (bad.length) throw Errors.serviceUnavailable(`table storage unavailable: ${bad.map(([n, p]) => `profile '${n}': ${p}`).join('; ')}`);
    // Redis only degrades rate limiting (fail-open by default): reported, but it does not make us unready.
    return { status: 'ready', catalog: 'up', storage: 'up', redis: state.redis } as const;
  }
}

/** The operator's view of the same checks: always answered, the state in the body. */
@Controller('admin/v1')
export class OperatorHealthController {
  constructor(private readonly health: HealthService) {}

  @Get('health')
  @Operation({
    operationId: 'GetGatewayHealth',
    summary: 'Health of the catalog, Redis and the storage profiles',
    description:
      'The checks of /readyz, each reported: the catalog database (and how long it took to answer), the Redis ' +
      "connection's state, and every storage profile's store (stores found answering are not asked again for " +
      `${STORE_PROBE_FRESH_MS / 1000} s). Always 200 within about ${HEALTH_TIMEOUT_MS / 1000} s: what does not answer ` +
      'by then is reported down.',
    tag: 'Operator',
    access: 'operator',
    responses: { 200: { description: 'The state of each dependency', schema: OperatorHealthReport } },
    errors: [401, 403, '5XX'],
  })
  async report(): Promise<OperatorHealthReport> {
    const state = await this.health.check();
    const { status, latencyMs, error } = state.catalog;
    return {
      catalog: { status, latency_ms: latencyMs, ...(error !== undefined ? { error } : {}) },
      redis: { status: state.redis },
      storage_profiles: Object.entries(state.stores)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([name, problem]) => (problem === null ? { name, status: 'up' as const } : { name, status: 'down' as const, error: problem })),
      checked_at: new Date().toISOString(),
    };
  }
}
