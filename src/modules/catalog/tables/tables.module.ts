import { Module } from '@nestjs/common';
import { VendingModule } from '../../vending';
import { LanceModule } from '../../../engine/lance/lance.module';
import { AuthModule } from '../../identity';
import { NamespacesModule } from '../namespaces/namespaces.module';
import { PendingModule } from '../../../platform/cluster/pending.module';
import { JobsModule } from '../../jobs';
import { ThrottlingModule } from '../../throttling';
import { DroppedCoreModule } from '../dropped/dropped-core.module';
import { ManagedVersionsController } from '../versions/managed-versions.controller';
import { ManagedVersionsService } from '../versions/managed-versions.service';
import { TableVersionsRepository } from '../versions/table-versions.repository';
import { TablesController } from './tables.controller';
import { VersionAdoption } from '../versions/version-adoption.service';
import { TablesRepository } from './tables.repository';
import { TablesService } from './tables.service';
import { TableWriteLifecycle } from './table-write-lifecycle.service';

/** The table catalog: declare, register, describe, list, rename, drop; catalog-managed versions. */
@Module({
  imports: [AuthModule, LanceModule, NamespacesModule, PendingModule, ThrottlingModule, VendingModule, JobsModule, DroppedCoreModule],
  controllers: [TablesController, ManagedVersionsController],
  providers: [TablesRepository, TablesService, TableWriteLifecycle, TableVersionsRepository, ManagedVersionsService, VersionAdoption],
  exports: [TablesService, TablesRepository, TableWriteLifecycle, ManagedVersionsService, TableVersionsRepository, VersionAdoption],
})
export class TablesModule {}
