import { Module } from '@nestjs/common';
import { DataplaneModule } from './dataplane/dataplane.module';
import { JobsModule } from './jobs/jobs.module';
import { MaintenanceModule } from './maintenance/maintenance.module';
import { NamespacesModule } from './namespaces/namespaces.module';
import { TablesModule } from './tables/tables.module';
import { TransactionsModule } from './transactions/transactions.module';
import { DroppedTablesModule } from './dropped/dropped-tables.module';

/** The feature modules that serve the Lance REST contract (mounted under BASE_PATH when one is set). */
export const LANCE_REST_MODULES = [NamespacesModule, TablesModule, TransactionsModule, DataplaneModule, JobsModule, DroppedTablesModule, MaintenanceModule];

@Module({ imports: LANCE_REST_MODULES })
export class LanceRestModule {}
