import { Module } from '@nestjs/common';
import { DropPolicy } from './drop-policy.service';
import { DroppedTablesRepository } from './dropped-tables.repository';

/** What the drop paths (tables, namespaces) need of soft-delete: the profile in force and the dropped_tables queries. */
@Module({
  providers: [DroppedTablesRepository, DropPolicy],
  exports: [DroppedTablesRepository, DropPolicy],
})
export class DroppedCoreModule {}
