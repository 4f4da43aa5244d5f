import { Module } from '@nestjs/common';
import { StorageModule } from '../../../engine/storage/storage.module';
import { AuthModule } from '../../identity';
import { DatabasesModule } from '../../databases';
import { NamespacesModule } from '../namespaces/namespaces.module';
import { PendingModule } from '../../../platform/cluster/pending.module';
import { TablesModule } from '../tables/tables.module';
import { ThrottlingModule } from '../../throttling';
import { DroppedCoreModule } from './dropped-core.module';
import { DroppedTablesAdminController, DroppedTablesController } from './dropped-tables.controller';
import { DroppedTablesService } from './dropped-tables.service';

/** Soft-deleted tables: list, undrop, purge (tenant routes), and the purge sweep; protection flags. */
@Module({
  imports: [AuthModule, StorageModule, PendingModule, ThrottlingModule, NamespacesModule, TablesModule, DroppedCoreModule, DatabasesModule],
  controllers: [DroppedTablesController],
  providers: [DroppedTablesService],
  exports: [DroppedTablesService],
})
export class DroppedTablesModule {}

/** The operator's routes about dropped tables (outside BASE_PATH, like the rest of the operator API). */
@Module({
  imports: [AuthModule, DatabasesModule, DroppedTablesModule],
  controllers: [DroppedTablesAdminController],
})
export class DroppedTablesAdminModule {}
