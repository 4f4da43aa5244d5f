import { Module } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { StorageModule } from '../../storage/storage.module';
import { AuthModule } from '../auth/auth.module';
import { TablesModule } from '../tables/tables.module';
import { ThrottlingModule } from '../throttling/throttling.module';
import { DataplaneController } from './dataplane.controller';
import { DataTables } from './data-tables.service';
import { TableIndicesService } from './table-indices.service';
import { TableReadsService } from './table-reads.service';
import { TableSchemaService } from './table-schema.service';
import { TableWritesService } from './table-writes.service';
import { EnterpriseController } from './enterprise.controller';
import { PhalanxVersionInterceptor } from './phalanx-version.interceptor';

/** The compute engine: data operations for the official remote client and the Enterprise routes. */
@Module({
  imports: [AuthModule, StorageModule, TablesModule, ThrottlingModule],
  controllers: [DataplaneController, EnterpriseController],
  providers: [DataTables, TableWritesService, TableReadsService, TableIndicesService, TableSchemaService, { provide: APP_INTERCEPTOR, useClass: PhalanxVersionInterceptor }],
})
export class DataplaneModule {}
