import { Module } from '@nestjs/common';
import { StorageModule } from '../storage/storage.module';
import { LanceEngine } from './lance-engine';
import { TableGarbage } from './table-garbage';

/** The Lance engine that reads and writes tables, and what crashed writes left in them; with the storage beneath. */
@Module({ imports: [StorageModule], providers: [LanceEngine, TableGarbage], exports: [StorageModule, LanceEngine, TableGarbage] })
export class LanceModule {}
