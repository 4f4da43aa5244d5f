import { Global, Module } from '@nestjs/common';
import { LanceModule } from '../../engine/lance/lance.module';
import { PendingModule } from '../../platform/cluster/pending.module';
import { QuotaService } from './quotas.service';
import { UsageMeter } from './usage-meter.service';
import { UsageRefresher } from './usage-refresher.service';
import { UsageRepository } from './usage.repository';

/**
 * Metering, quotas and the storage refresher (README "Usage and quotas"), global: the request observer, the catalog
 * and the data plane count and check through them.
 */
@Global()
@Module({
  imports: [LanceModule, PendingModule],
  providers: [UsageRepository, UsageMeter, QuotaService, UsageRefresher],
  exports: [UsageRepository, UsageMeter, QuotaService, UsageRefresher],
})
export class UsageCoreModule {}
