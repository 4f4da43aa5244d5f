import { Module } from '@nestjs/common';
import { DataplaneModule } from './data/dataplane.module';
import { JobsModule } from './jobs/jobs.module';
import { MaintenanceModule } from './maintenance/maintenance.module';
import { NamespacesModule } from './catalog/namespaces/namespaces.module';
import { TablesModule } from './catalog/tables/tables.module';
import { TransactionsModule } from './catalog/transactions/transactions.module';
import { DroppedTablesModule } from './catalog/dropped/dropped-tables.module';
import { CredentialModule } from './credential/credential.module';

/** The feature modules that serve the Lance REST contract (mounted under BASE_PATH when one is set). */
export const LANCE_REST_MODULES = [
  NamespacesModule,
  TablesModule,
  TransactionsModule,
  DataplaneModule,
  JobsModule,
  DroppedTablesModule,
  MaintenanceModule,
  CredentialModule,
];

@Module({ imports: LANCE_REST_MODULES })
export class LanceRestModule {}
