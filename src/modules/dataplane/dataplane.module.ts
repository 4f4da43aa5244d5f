import { Module } from '@nestjs/common';
import { StorageModule } from '../../storage/storage.module';
import { AuthModule } from '../auth/auth.module';
import { TablesModule } from '../tables/tables.module';
import { JobsModule } from '../jobs/jobs.module';
import { TableJobsService } from './table-jobs.service';
import { ThrottlingModule } from '../throttling/throttling.module';
import { DataplaneController } from './dataplane.controller';
import { DataTables } from './data-tables.service';
import { TableIndicesService } from './table-indices.service';
import { TableReadsService } from './table-reads.service';
import { TableSchemaService } from './table-schema.service';
import { TableWritesService } from './table-writes.service';
import { EnterpriseController } from './enterprise.controller';
import { MaterializedViewsController } from './materialized-views.controller';
import { TableCloneController } from './table-clone.controller';
import { MultipartController } from './multipart.controller';
import { TableCloneService } from './table-clone.service';
import { TableMetadataService } from './table-metadata.service';
import { TableRefsController } from './table-refs.controller';
import { TableRefsService } from './table-refs.service';
import { PhalanxVersionHeader } from './phalanx-version.header';
import { AllocatorRetention } from './allocator-retention';
import { WriteBudget } from './write-budget';

/** The compute engine: data operations for the official remote client and the Enterprise routes. */
@Module({
  imports: [AuthModule, StorageModule, TablesModule, ThrottlingModule, JobsModule],
  controllers: [DataplaneController, EnterpriseController, TableRefsController, MaterializedViewsController, TableCloneController, MultipartController],
  providers: [WriteBudget, AllocatorRetention, TableCloneService, DataTables, TableWritesService, TableReadsService, TableIndicesService, TableSchemaService, TableRefsService, TableMetadataService, PhalanxVersionHeader, TableJobsService],
})
export class DataplaneModule {}
