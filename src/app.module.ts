import { DynamicModule, Module } from '@nestjs/common';
import { RouterModule } from '@nestjs/core';
import type { Logger as RootLogger } from 'pino';
import { AppConfig } from './platform/config/config';
import { ConfigModule } from './platform/config/config.module';
import { CatalogDb } from './platform/db/catalog-db';
import { DatabaseModule } from './platform/db/database.module';
import { AuditModule } from './modules/audit/audit.module';
import { OutboxModule } from './modules/outbox';
import { EventsModule } from './modules/events';
import { DatabasesModule } from './modules/databases/databases.module';
import { HealthModule } from './modules/health/health.module';
import { IdempotencyModule } from './modules/idempotency/idempotency.module';
import { LANCE_REST_MODULES, LanceRestModule } from './modules/lance-rest.module';
import { TableWriteSignalsModule } from './modules/catalog/tables/table-write-signals';
import { ObservabilityModule } from './platform/observability/observability.module';
import { RuntimeModule } from './platform/runtime/runtime.module';
import { ReclaimerModule } from './modules/reclaim/reclaimer.module';
import { DroppedTablesAdminModule } from './modules/catalog/dropped/dropped-tables.module';
import { MeteringModule } from './modules/metering/metering.module';
import { UsageModule } from './modules/usage/usage.module';
import { RoutePolicyModule } from './route-policy.module';

/** Composes the gateway: infrastructure, the operator API, health, and the REST contract (under BASE_PATH). */
@Module({})
export class AppModule {
  static register(config: AppConfig, catalog: CatalogDb, logger: RootLogger): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.register(config),
        DatabaseModule.register(catalog),
        ObservabilityModule.register(logger),
        RuntimeModule,
        OutboxModule,
        AuditModule,
        IdempotencyModule,
        RoutePolicyModule,
        MeteringModule,
        TableWriteSignalsModule,
        HealthModule,
        DatabasesModule,
        UsageModule,
        LanceRestModule,
        ReclaimerModule,
        DroppedTablesAdminModule,
        EventsModule,
        ...(config.basePath
          ? [RouterModule.register([{ path: config.basePath, module: LanceRestModule, children: LANCE_REST_MODULES }])]
          : []),
      ],
    };
  }
}
