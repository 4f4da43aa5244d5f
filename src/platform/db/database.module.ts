import { DynamicModule, Global, Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import { PrismaClient } from '../../generated/prisma/client';
import { CATALOG_DB, CatalogDb } from './catalog-db';
import { UnitOfWork } from './unit-of-work';

/** Closes the catalog connection last, after every other provider has finished its shutdown work. */
class CatalogLifecycle implements OnApplicationShutdown {
  constructor(@Inject(CATALOG_DB) private readonly catalog: CatalogDb) {}
  async onApplicationShutdown(): Promise<void> {
    await this.catalog.close();
  }
}

/**
 * The catalog (Postgres or embedded PGlite, opened and migrated before Nest starts) and its unit of work
 * (unit-of-work.ts), for repositories and the services that open units.
 */
@Global()
@Module({})
export class DatabaseModule {
  static register(catalog: CatalogDb): DynamicModule {
    return {
      module: DatabaseModule,
      providers: [
        { provide: CATALOG_DB, useValue: catalog },
        { provide: PrismaClient, useValue: catalog.prisma },
        CatalogLifecycle,
        UnitOfWork,
      ],
      exports: [PrismaClient, CATALOG_DB, UnitOfWork],
    };
  }
}
