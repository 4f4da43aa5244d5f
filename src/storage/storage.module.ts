import { Module } from '@nestjs/common';
import { LanceEngine } from './lance-engine';
import { TableStorage } from './table-storage.service';

/** Table data: where tables live and the Lance engine that reads and writes them. */
@Module({ providers: [TableStorage, LanceEngine], exports: [TableStorage, LanceEngine] })
export class StorageModule {}
