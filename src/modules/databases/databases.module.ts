import { Module } from '@nestjs/common';
import { StorageModule } from '../../engine/storage/storage.module';
import { AuthModule } from '../identity';
import { PendingModule } from '../../platform/cluster/pending.module';
import { DropPolicyModule } from './drop-policy.module';
import { DatabasesController } from './databases.controller';
import { DatabasesService } from './databases.service';

/** The operator API: databases, their keys and their audit trail. */
@Module({
  imports: [AuthModule, StorageModule, PendingModule, DropPolicyModule],
  controllers: [DatabasesController],
  providers: [DatabasesService],
  exports: [DatabasesService],
})
export class DatabasesModule {}
