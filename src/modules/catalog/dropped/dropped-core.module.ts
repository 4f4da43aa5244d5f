import { Module } from '@nestjs/common';
import { DropPolicyModule } from '../../databases';
import { DroppedTablesRepository } from './dropped-tables.repository';

/** What the drop paths (tables, namespaces) need of soft-delete: the profile in force and the dropped_tables queries. */
@Module({
  imports: [DropPolicyModule],
  providers: [DroppedTablesRepository],
  exports: [DroppedTablesRepository, DropPolicyModule],
})
export class DroppedCoreModule {}
