import { Module } from '@nestjs/common';
import { VendingModule } from '../vending/vending.module';
import { StorageModule } from '../../storage/storage.module';
import { AuthModule } from '../auth/auth.module';
import { NamespacesModule } from '../namespaces/namespaces.module';
import { PendingModule } from '../reclaim/pending.module';
import { JobsModule } from '../jobs/jobs.module';
import { ThrottlingModule } from '../throttling/throttling.module';
import { DroppedCoreModule } from '../dropped/dropped-core.module';
import { ManagedVersionsController } from './managed-versions.controller';
import { ManagedVersionsService } from './managed-versions.service';
import { TableVersionsRepository } from './table-versions.repository';
import { TablesController } from './tables.controller';
import { VersionAdoption } from './version-adoption.service';
import { TablesRepository } from './tables.repository';
import { TablesService } from './tables.service';

/** The table catalog: declare, register, describe, list, rename, drop; catalog-managed versions. */
@Module({
  imports: [AuthModule, StorageModule, NamespacesModule, PendingModule, ThrottlingModule, VendingModule, JobsModule, DroppedCoreModule],
  controllers: [TablesController, ManagedVersionsController],
  providers: [TablesRepository, TablesService, TableVersionsRepository, ManagedVersionsService, VersionAdoption],
  exports: [TablesService, ManagedVersionsService, TableVersionsRepository, VersionAdoption],
})
export class TablesModule {}
