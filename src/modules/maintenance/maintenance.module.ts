import { Module } from '@nestjs/common';
import { LanceModule } from '../../engine/lance/lance.module';
import { AuthModule } from '../identity';
import { JobsModule } from '../jobs';
import { TablesModule } from '../catalog';
import { ThrottlingModule } from '../throttling';
import { MaintenanceAdmin } from './maintenance.admin';
import { MaintenanceAdminController, MaintenanceController } from './maintenance.controller';
import { MaintenanceRepository } from './maintenance.repository';
import { MaintenanceService } from './maintenance.service';
import { MaintenanceTriggers } from './maintenance.triggers';

/** Table maintenance (docs/maintenance.md): automatic compaction, index optimization and version cleanup. */
@Module({
  imports: [AuthModule, LanceModule, TablesModule, ThrottlingModule, JobsModule],
  controllers: [MaintenanceController, MaintenanceAdminController],
  providers: [MaintenanceRepository, MaintenanceService, MaintenanceTriggers, MaintenanceAdmin],
  exports: [MaintenanceAdmin, MaintenanceService],
})
export class MaintenanceModule {}
