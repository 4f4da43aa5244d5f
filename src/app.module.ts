import { DynamicModule, Global, Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import { RouterModule } from '@nestjs/core';
import { PassportModule } from '@nestjs/passport';
import { APP_CONFIG, AppConfig } from './config/config';
import { CATALOG_DB, CatalogDb } from './database/catalog-db';
import { PrismaClient } from './generated/prisma/client';
import { ApiKeysRepository } from './modules/auth/api-keys.repository';
import { ApiKeysService } from './modules/auth/api-keys.service';
import { AuditInterceptor } from './modules/audit/audit.interceptor';
import { AuditRepository } from './modules/audit/audit.repository';
import { AuditService } from './modules/audit/audit.service';
import { AdminKeyGuard, DatabaseAdminGuard } from './modules/auth/admin-key.guard';
import { BearerStrategy } from './modules/auth/bearer.strategy';
import { CatalogAccessGuard } from './modules/auth/catalog-access.guard';
import { CredentialsService } from './modules/auth/credentials.service';
import { JwtVerifier } from './modules/auth/jwt-verifier.service';
import { DatabasesController } from './modules/databases/databases.controller';
import { DatabasesRepository } from './modules/databases/databases.repository';
import { DatabasesService } from './modules/databases/databases.service';
import { HealthController } from './modules/health/health.controller';
import { HealthRepository } from './modules/health/health.repository';
import { NamespacesController } from './modules/namespaces/namespaces.controller';
import { NamespacesRepository } from './modules/namespaces/namespaces.repository';
import { NamespacesService } from './modules/namespaces/namespaces.service';
import { TableStorage } from './modules/tables/table-storage.service';
import { TablesController } from './modules/tables/tables.controller';
import { TablesRepository } from './modules/tables/tables.repository';
import { TablesService } from './modules/tables/tables.service';
import { TenancyService } from './modules/tenancy/tenancy.service';
import { TransactionsController } from './modules/transactions/transactions.controller';
import { TransactionsRepository } from './modules/transactions/transactions.repository';
import { TransactionsService } from './modules/transactions/transactions.service';
import { ObservabilityModule } from './modules/observability/observability.module';
import type { Logger as RootLogger } from 'pino';
import { ThrottlingModule } from './modules/throttling/throttling.module';
import { DataplaneModule } from './modules/dataplane/dataplane.module';

/** Tenancy: which database a request addresses. */
@Module({ providers: [DatabasesRepository, TenancyService], exports: [DatabasesRepository, TenancyService] })
export class TenancyModule {}

/**
 * Credentials: API keys (hashed), OAuth 2.0 bearer tokens (JWT, via passport-http-bearer), and the guards of the
 * REST contract and the operator API.
 */
@Module({
  imports: [TenancyModule, PassportModule],
  providers: [
    ApiKeysRepository,
    ApiKeysService,
    JwtVerifier,
    BearerStrategy,
    CredentialsService,
    CatalogAccessGuard,
    AdminKeyGuard,
    DatabaseAdminGuard,
  ],
  exports: [ApiKeysService, CredentialsService, CatalogAccessGuard, AdminKeyGuard, DatabaseAdminGuard, TenancyModule],
})
export class AuthModule {}

/** The audit trail, recorded by AuditInterceptor on routes marked @Audited (global: any controller may audit). */
@Global()
@Module({
  imports: [TenancyModule],
  providers: [AuditRepository, AuditService, AuditInterceptor],
  exports: [AuditService, AuditInterceptor],
})
export class AuditModule {}

/** Table data on disk, read through the Lance engine. */
@Module({ providers: [TableStorage], exports: [TableStorage] })
export class StorageModule {}

@Module({
  imports: [AuthModule, StorageModule, ThrottlingModule],
  controllers: [TransactionsController],
  providers: [TransactionsRepository, TransactionsService],
  exports: [TransactionsService],
})
export class TransactionsModule {}

@Module({
  imports: [AuthModule, TransactionsModule, ThrottlingModule],
  controllers: [NamespacesController],
  providers: [NamespacesRepository, NamespacesService],
  exports: [NamespacesRepository, NamespacesService],
})
export class NamespacesModule {}

@Module({
  imports: [AuthModule, StorageModule, NamespacesModule, TransactionsModule, ThrottlingModule],
  controllers: [TablesController],
  providers: [TablesRepository, TablesService],
  exports: [TablesService],
})
export class TablesModule {}

/** The REST contract of the mission (mounted under BASE_PATH). */
@Module({ imports: [NamespacesModule, TablesModule, TransactionsModule, DataplaneModule] })
export class LanceRestModule {}

/** The operator API. */
@Module({
  imports: [AuthModule, StorageModule, AuditModule],
  controllers: [DatabasesController],
  providers: [DatabasesService],
  exports: [DatabasesService],
})
export class DatabasesModule {}

@Module({ imports: [ThrottlingModule], controllers: [HealthController], providers: [HealthRepository] })
export class HealthModule {}

/** Closes the catalog connection last, after every other provider has finished its shutdown work. */
class CatalogLifecycle implements OnApplicationShutdown {
  constructor(@Inject(CATALOG_DB) private readonly catalog: CatalogDb) {}
  async onApplicationShutdown(): Promise<void> {
    await this.catalog.close();
  }
}

/** Configuration and the catalog connection, available everywhere. */
@Global()
@Module({})
class CoreModule {
  static register(config: AppConfig, catalog: CatalogDb): DynamicModule {
    return {
      module: CoreModule,
      providers: [
        { provide: APP_CONFIG, useValue: config },
        { provide: CATALOG_DB, useValue: catalog },
        { provide: PrismaClient, useValue: catalog.prisma },
        CatalogLifecycle,
      ],
      exports: [APP_CONFIG, PrismaClient, CATALOG_DB],
    };
  }
}

@Module({})
export class AppModule {
  static register(config: AppConfig, catalog: CatalogDb, logger: RootLogger): DynamicModule {
    return {
      module: AppModule,
      imports: [
        CoreModule.register(config, catalog),
        ObservabilityModule.register(logger),
        HealthModule,
        DatabasesModule,
        LanceRestModule,
        ...(config.basePath ? [RouterModule.register([{ path: config.basePath, module: LanceRestModule, children: [NamespacesModule, TablesModule, TransactionsModule, DataplaneModule] }])] : []),
      ],
    };
  }
}
