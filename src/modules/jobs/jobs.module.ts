import { Module } from '@nestjs/common';
import { AuthModule } from '../identity';
import { PendingModule } from '../../platform/cluster/pending.module';
import { ThrottlingModule } from '../throttling';
import { JobsController } from './jobs.controller';
import { JobsRepository } from './jobs.repository';
import { JobRunner } from './jobs.runner';
import { JobsService } from './jobs.service';

/**
 * Jobs: long operations kept in the catalog and run by any replica (JobRunner). The modules that own a job type
 * register its executor with JobsService (the data plane: backfill_column).
 */
@Module({
  imports: [AuthModule, PendingModule, ThrottlingModule],
  controllers: [JobsController],
  providers: [JobsRepository, JobsService, JobRunner],
  exports: [JobsService],
})
export class JobsModule {}
