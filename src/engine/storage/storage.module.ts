import { Global, Module } from '@nestjs/common';
import { LOCATION_REMOVER } from '../../platform/cluster/location-remover';
import { TableStorage } from './table-storage.service';

/**
 * Table data: where tables live (the stores of the storage profiles); the Lance engine above it is LanceModule.
 * Global so that platform/cluster's PendingModule, which may not import engine code, finds LOCATION_REMOVER.
 */
@Global()
@Module({
  providers: [TableStorage, { provide: LOCATION_REMOVER, useExisting: TableStorage }],
  exports: [TableStorage, LOCATION_REMOVER],
})
export class StorageModule {}
