import { Global, Module } from '@nestjs/common';
import { LanceModule } from '../../engine/lance/lance.module';
import { PendingModule } from '../../platform/cluster/pending.module';
import { QuotaService } from './quotas.service';
import { RequestObserver } from './request-observer';
import { UsageMeter } from './usage-meter.service';
import { UsageRepository } from './usage.repository';

/**
 * Metering and quotas (docs/usage-and-quotas.md), global: the catalog and the data plane count and check through
 * them; RequestObserver writes the request line and counts every answered request.
 */
@Global()
@Module({
  imports: [LanceModule, PendingModule],
  providers: [UsageRepository, UsageMeter, QuotaService, RequestObserver],
  exports: [UsageRepository, UsageMeter, QuotaService],
})
export class MeteringModule {}
