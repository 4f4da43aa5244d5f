import { Module } from '@nestjs/common';
import { LanceEngine } from '../lance/lance-engine';
import { TableGarbage } from './table-garbage';
import { TableStorage } from './table-storage.service';

/** Table data: where tables live, the Lance engine that reads and writes them, and what crashed writes left. */
@Module({ providers: [TableStorage, LanceEngine, TableGarbage], exports: [TableStorage, LanceEngine, TableGarbage] })
export class StorageModule {}
