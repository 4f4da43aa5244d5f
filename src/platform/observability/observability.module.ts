import { DynamicModule, Global, Module } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import type { Logger } from 'pino';
import { RedisModule } from '../redis/redis.module';
import { MetricsKeyGuard } from './metrics-key.guard';
import { MetricsController } from './metrics.controller';
import { MetricsService } from './metrics.service';
import { ROOT_LOGGER } from './logger';

/** Structured logs (pino via nestjs-pino) and Prometheus metrics. */
@Global()
@Module({})
export class ObservabilityModule {
  static register(root: Logger): DynamicModule {
    return {
      module: ObservabilityModule,
      imports: [
        RedisModule,
        // Application logs through the same root logger. No per-request pino-http middleware (forRoutes: []):
        // the request line is written by RequestObserver (modules/metering) from a Fastify hook, which knows the route and tenant.
        LoggerModule.forRoot({ pinoHttp: { logger: root, autoLogging: false }, forRoutes: [] }),
      ],
      controllers: [MetricsController],
      providers: [{ provide: ROOT_LOGGER, useValue: root }, MetricsService, MetricsKeyGuard],
      exports: [MetricsService, MetricsKeyGuard, ROOT_LOGGER],
    };
  }
}
