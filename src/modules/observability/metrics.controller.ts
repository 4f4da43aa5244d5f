import { Controller, Get, Header, UseGuards } from '@nestjs/common';
import { MetricsKeyGuard } from './metrics-key.guard';
import { MetricsService } from './metrics.service';

/**
 * Prometheus scrape endpoint: never throttled, like the health routes; behind METRICS_API_KEY when it is set
 * (MetricsKeyGuard).
 */
@Controller()
export class MetricsController {
  constructor(private readonly metrics: MetricsService) {}

  @Get('metrics')
  @UseGuards(MetricsKeyGuard)
  @Header('content-type', 'text/plain; version=0.0.4; charset=utf-8')
  scrape(): Promise<string> {
    return this.metrics.registry.metrics();
  }
}
