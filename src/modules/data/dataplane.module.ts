import { Module } from '@nestjs/common';
import { LanceModule } from '../../engine/lance/lance.module';
import { AuthModule } from '../identity';
import { TablesModule } from '../catalog';
import { JobsModule } from '../jobs';
import { TableJobsService } from './jobs/table-jobs.service';
import { ThrottlingModule } from '../throttling';
import { DataTables } from './data-tables.service';
import { TableIndicesService } from './indices/table-indices.service';
import { TableReadsService } from './reads/table-reads.service';
import { TableSchemaService } from './schema/table-schema.service';
import { TableWritesService } from './writes/table-writes.service';
import { MultipartWrites } from './writes/multipart-writes.service';
import { WriteBodies } from './writes/write-bodies';
import { TableWritesController } from './writes/table-writes.controller';
import { TableReadsController } from './reads/table-reads.controller';
import { TableIndicesController } from './indices/table-indices.controller';
import { TableSchemaController } from './schema/table-schema.controller';
import { EnterpriseController } from './enterprise/enterprise.controller';
import { MaterializedViewsController } from './views/materialized-views.controller';
import { TableCloneController } from './clone/table-clone.controller';
import { MultipartController } from './multipart/multipart.controller';
import { TableCloneService } from './clone/table-clone.service';
import { TableMetadataService } from './schema/table-metadata.service';
import { TableRefsController } from './refs/table-refs.controller';
import { TableRefsService } from './refs/table-refs.service';
import { PhalanxVersionHeader } from './phalanx-version.header';
import { WRITE_ACTIVITY } from '../../platform/runtime/allocator-retention';
import { WriteBudget } from './writes/write-budget';

/** The compute engine: data operations for the official remote client and the Enterprise routes. */
@Module({
  imports: [AuthModule, LanceModule, TablesModule, ThrottlingModule, JobsModule],
  // The data controllers first, where the one they were split from was; no two of their routes match one path.
  controllers: [
    TableWritesController,
    TableReadsController,
    TableIndicesController,
    TableSchemaController,
    EnterpriseController,
    TableRefsController,
    MaterializedViewsController,
    TableCloneController,
    MultipartController,
  ],
  providers: [
    WriteBudget,
    { provide: WRITE_ACTIVITY, useExisting: WriteBudget },
    TableCloneService,
    DataTables,
    TableWritesService,
    WriteBodies,
    MultipartWrites,
    TableReadsService,
    TableIndicesService,
    TableSchemaService,
    TableRefsService,
    TableMetadataService,
    PhalanxVersionHeader,
    TableJobsService,
  ],
})
export class DataplaneModule {}
