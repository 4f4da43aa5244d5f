import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { ROOT_LOGGER } from '../../platform/observability/logger';
import { MetricsService } from '../../platform/observability/metrics.service';
import type { TenantRequest } from '../identity';
import { UsageMeter } from './usage-meter.service';

type ObservedRequest = FastifyRequest & Pick<TenantRequest, 'tenant' | 'throttled'> & { actor?: string };

/**
 * One structured log line and the request metrics for every answered request, from a Fastify onResponse hook:
 * method, route template, status, latency, database, who (key id / token subject / operator — never a secret),
 * and the request id (the client's x-request-id or a generated one, also echoed and used as `instance`).
 */
@Injectable()
export class RequestObserver implements OnModuleInit {
  /**
   * The request lines' logger: the root logger without its redaction, which copies every logged object (about 9 KB
   * per request) to look for credential paths a request line never has: its fields are the ones `observe` sets.
   */
  private readonly requestLog: Logger;

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly metrics: MetricsService,
    private readonly meter: UsageMeter,
    @Inject(ROOT_LOGGER) private readonly logger: Logger,
  ) {
    this.requestLog = logger.child({}, { redact: [] });
  }

  onModuleInit(): void {
    const adapter = this.adapterHost.httpAdapter;
    if (!adapter) return; // application context (CLI): no HTTP
    const fastify = adapter.getInstance() as FastifyInstance;
    // A callback-style hook (an async one costs every request a promise).
    fastify.addHook('onResponse', (req: ObservedRequest, reply: FastifyReply, done: () => void) => {
      try {
        this.observe(req, reply);
      } catch (err) {
        this.logger.error({ err }, 'request observation failed');
      }
      done();
    });
  }

  private observe(req: ObservedRequest, reply: FastifyReply): void {
    const route = req.routeOptions?.url ?? '(unmatched)';
    const status = reply.statusCode;
    const seconds = reply.elapsedTime / 1000;
    const database = req.tenant?.database.name ?? '';
    // Usage: every answered request that passed its database's access check, by the role its route needs; those the
    // rate limit refused (the throttling guard runs after the access check, so they have their tenant) and those
    // answered with another 5xx also by how they ended.
    if (req.tenant) {
      const outcome = req.throttled ? 'throttled' : status >= 500 ? 'failed' : undefined;
      this.meter.request(req.tenant.database.id, (req.tenant.need ?? 'read') !== 'read', outcome);
    }
    this.metrics.requests.inc({ method: req.method, route, status: String(status), database });
    this.metrics.latency.observe({ method: req.method, route, status: String(status) }, seconds);
    if (status === 401 || status === 403) this.metrics.authFailures.inc({ status: String(status) });
    if (route === '/healthz' || route === '/readyz' || route === '/metrics') return; // probes: counted, not logged
    this.requestLog[status >= 500 ? 'error' : status >= 400 ? 'warn' : 'info'](
      {
        reqId: req.id,
        method: req.method,
        route,
        status,
        latency_ms: Math.round(reply.elapsedTime * 100) / 100,
        ...(database ? { database } : {}),
        ...(req.tenant?.catalog ? { catalog: req.tenant.catalog } : {}),
        ...(req.tenant?.principal || req.actor ? { principal: req.tenant?.principal ?? req.actor } : {}),
      },
      'request',
    );
  }
}
