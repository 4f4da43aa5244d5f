import { DynamicModule, Global, Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import { RouterModule } from '@nestjs/core';
import { APP_CONFIG, AppConfig } from './config/config';
import { CatalogDb } from './database/catalog-db';
import { PrismaClient } from './generated/prisma/client';
import { ApiKeysRepository } from './modules/auth/api-keys.repository';
import { ApiKeysService } from './modules/auth/api-keys.service';
import { AdminKeyGuard } from './modules/auth/admin-key.guard';
import { CatalogAccessGuard } from './modules/auth/catalog-access.guard';
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

/** Tenancy: which database a request addresses. */
@Module({ providers: [DatabasesRepository, TenancyService], exports: [DatabasesRepository, TenancyService] })
export class TenancyModule {}

/** Credentials: API keys (hashed) and the guards of the REST contract and the operator API. */
@Module({
  imports: [TenancyModule],
  providers: [ApiKeysRepository, ApiKeysService, CatalogAccessGuard, AdminKeyGuard],
  exports: [ApiKeysService, CatalogAccessGuard, AdminKeyGuard, TenancyModule],
})
export class AuthModule {}

/** Table data on disk, read through the Lance engine. */
@Module({ providers: [TableStorage], exports: [TableStorage] })
export class StorageModule {}

@Module({
  imports: [AuthModule, StorageModule],
  controllers: [TransactionsController],
  providers: [TransactionsRepository, TransactionsService],
  exports: [TransactionsService],
})
export class TransactionsModule {}

@Module({
  imports: [AuthModule, TransactionsModule],
  controllers: [NamespacesController],
  providers: [NamespacesRepository, NamespacesService],
  exports: [NamespacesRepository, NamespacesService],
})
export class NamespacesModule {}

@Module({
  imports: [AuthModule, StorageModule, NamespacesModule, TransactionsModule],
  controllers: [TablesController],
  providers: [TablesRepository, TablesService],
})
export class TablesModule {}

/** The REST contract of the mission (mounted under BASE_PATH). */
@Module({ imports: [NamespacesModule, TablesModule, TransactionsModule] })
export class LanceRestModule {}

/** The operator API. */
@Module({
  imports: [AuthModule, StorageModule],
  controllers: [DatabasesController],
  providers: [DatabasesService],
  exports: [DatabasesService],
})
export class DatabasesModule {}

@Module({ controllers: [HealthController], providers: [HealthRepository] })
export class HealthModule {}

const CATALOG_DB = Symbol('CATALOG_DB');

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
      exports: [APP_CONFIG, PrismaClient],
    };
  }
}

@Module({})
export class AppModule {
  static register(config: AppConfig, catalog: CatalogDb): DynamicModule {
    return {
      module: AppModule,
      imports: [
        CoreModule.register(config, catalog),
        HealthModule,
        DatabasesModule,
        LanceRestModule,
        ...(config.basePath ? [RouterModule.register([{ path: config.basePath, module: LanceRestModule, children: [NamespacesModule, TablesModule, TransactionsModule] }])] : []),
      ],
    };
  }
}
