import { Module } from '@nestjs/common';
import { StorageModule } from '../../storage/storage.module';
import { AuthModule } from '../auth/auth.module';
import { PendingModule } from '../reclaim/pending.module';
import { DroppedCoreModule } from '../dropped/dropped-core.module';
import { DatabasesController } from './databases.controller';
import { DatabasesService } from './databases.service';

/** The operator API: databases, their keys and their audit trail. */
@Module({
  imports: [AuthModule, StorageModule, PendingModule, DroppedCoreModule],
  controllers: [DatabasesController],
  providers: [DatabasesService],
  exports: [DatabasesService],
})
export class DatabasesModule {}
