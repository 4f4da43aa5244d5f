import { Controller, Get, Header } from '@nestjs/common';
import { MetricsService } from './metrics.service';

/** Prometheus scrape endpoint: unauthenticated and never throttled, like the health routes. */
@Controller()
export class MetricsController {
  constructor(private readonly metrics: MetricsService) {}

  @Get('metrics')
  @Header('content-type', 'text/plain; version=0.0.4; charset=utf-8')
  scrape(): Promise<string> {
    return this.metrics.registry.metrics();
  }
}
