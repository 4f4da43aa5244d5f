import { Module } from '@nestjs/common';
import { StorageModule } from '../../engine/storage/storage.module';
import { PendingLocationsRepository } from './pending-locations.repository';
import { PendingLocations, ReplicaIdentity } from './pending-locations.service';

/** Pending storage locations: what writers record before storage work starts (the reclaimer's input). */
@Module({
  imports: [StorageModule],
  providers: [ReplicaIdentity, PendingLocationsRepository, PendingLocations],
  exports: [ReplicaIdentity, PendingLocationsRepository, PendingLocations],
})
export class PendingModule {}
