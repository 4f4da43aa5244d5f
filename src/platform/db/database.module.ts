import { DynamicModule, Global, Inject, Module, OnApplicationShutdown, Provider } from '@nestjs/common';
import { APP_GUARD, APP_INTERCEPTOR } from '@nestjs/core';
import { ClsModule } from 'nestjs-cls';
import { ClsPluginTransactional } from '@nestjs-cls/transactional';
import { TransactionalAdapterPrisma } from '@nestjs-cls/transactional-adapter-prisma';
import { PrismaClient } from '../../generated/prisma/client';
import { CATALOG_DB, CatalogDb } from './catalog-db';
import { UNIT_OF_WORK_OPTIONS, UnitOfWork } from './unit-of-work';

/** Closes the catalog connection last, after every other provider has finished its shutdown work. */
class CatalogLifecycle implements OnApplicationShutdown {
  constructor(@Inject(CATALOG_DB) private readonly catalog: CatalogDb) {}
  async onApplicationShutdown(): Promise<void> {
    await this.catalog.close();
  }
}

/** The catalog client itself, in a module of its own so the unit-of-work plugin can import it. */
@Module({})
class CatalogClientModule {
  static register(catalog: CatalogDb): DynamicModule {
    return {
      module: CatalogClientModule,
      global: true,
      providers: [
        { provide: CATALOG_DB, useValue: catalog },
        { provide: PrismaClient, useValue: catalog.prisma },
      ],
      exports: [PrismaClient, CATALOG_DB],
    };
  }
}

/**
 * nestjs-cls's root module always registers a global guard and a global interceptor, which do nothing unless told
 * to mount (this gateway mounts neither: a unit of work opens its own context). Each still costs every request of
 * every route an enhancer call, the interceptor an async resource and an Observable pipeline; they are left out.
 */
function withoutGlobalEnhancers(cls: DynamicModule): DynamicModule {
  const isEnhancer = (p: Provider) => typeof p === 'object' && 'provide' in p && (p.provide === APP_GUARD || p.provide === APP_INTERCEPTOR);
  return {
    ...cls,
    imports: cls.imports?.map((m) => {
      const d = m as DynamicModule;
      return d && typeof d === 'object' && Array.isArray(d.providers) ? { ...d, providers: d.providers.filter((p) => !isEnhancer(p)) } : m;
    }),
  };
}

/**
 * The catalog (Postgres or embedded PGlite, opened and migrated before Nest starts) and its unit of work
 * (unit-of-work.ts), for repositories and the services that open units.
 */
@Global()
@Module({})
export class DatabaseModule {
  static register(catalog: CatalogDb): DynamicModule {
    const client = CatalogClientModule.register(catalog);
    return {
      module: DatabaseModule,
      imports: [
        client,
        withoutGlobalEnhancers(
          ClsModule.forRoot({
            plugins: [
              new ClsPluginTransactional({
                imports: [client],
                adapter: new TransactionalAdapterPrisma({
                  prismaInjectionToken: PrismaClient,
                  defaultTxOptions: UNIT_OF_WORK_OPTIONS,
                  sqlFlavor: 'postgresql',
                }),
              }),
            ],
          }),
        ),
      ],
      providers: [CatalogLifecycle, UnitOfWork],
      exports: [client, UnitOfWork],
    };
  }
}
