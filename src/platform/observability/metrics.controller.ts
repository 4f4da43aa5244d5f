import { Controller, Get, Header } from '@nestjs/common';
import { Operation } from '../http/operation.decorator';
import { MetricsService } from './metrics.service';

/**
 * Prometheus scrape endpoint: never throttled, like the health routes; behind METRICS_API_KEY when it is set
 * (MetricsKeyGuard, put on the route by its `metrics` access).
 */
@Controller()
export class MetricsController {
  constructor(private readonly metrics: MetricsService) {}

  @Get('metrics')
  @Operation({
    operationId: 'GetMetrics',
    summary: 'Prometheus metrics',
    description:
      'Prometheus text exposition format. Never throttled. Series carry a `database` label only with ' + 'METRICS_DATABASE_LABELS=true.',
    tag: 'Observability',
    access: 'metrics',
    responses: { 200: { description: 'Metrics', raw: { contentType: 'text/plain; version=0.0.4', schema: { type: 'string' } } } },
    errors: [401],
  })
  @Header('content-type', 'text/plain; version=0.0.4; charset=utf-8')
  scrape(): Promise<string> {
    return this.metrics.registry.metrics();
  }
}
