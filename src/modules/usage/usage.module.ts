import { Module } from '@nestjs/common';
import { LanceModule } from '../../engine/lance/lance.module';
import { PendingModule } from '../../platform/cluster/pending.module';
import { AuthModule, TenancyModule } from '../identity';
import { DatabasesModule } from '../databases';
import { UsageController } from './usage.controller';
import { UsageRefresher } from './usage-refresher.service';
import { UsageService } from './usage.service';

/** The usage API (operator routes) and the storage refresher; the counting itself is modules/metering's. */
@Module({
  imports: [AuthModule, TenancyModule, DatabasesModule, LanceModule, PendingModule],
  controllers: [UsageController],
  providers: [UsageService, UsageRefresher],
  exports: [UsageService, UsageRefresher],
})
export class UsageModule {}
