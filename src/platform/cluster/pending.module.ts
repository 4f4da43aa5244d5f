import { Module } from '@nestjs/common';
import { PendingLocationsRepository } from './pending-locations.repository';
import { PendingLocations, ReplicaIdentity } from './pending-locations.service';

/**
 * Pending storage locations: what writers record before storage work starts (the reclaimer's input). Clean-ups
 * remove locations through LOCATION_REMOVER, which engine/storage's (global) StorageModule provides.
 */
@Module({
  providers: [ReplicaIdentity, PendingLocationsRepository, PendingLocations],
  exports: [ReplicaIdentity, PendingLocationsRepository, PendingLocations],
})
export class PendingModule {}
