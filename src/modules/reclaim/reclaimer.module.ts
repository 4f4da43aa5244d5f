import { Module } from '@nestjs/common';
import { LanceModule } from '../../engine/lance/lance.module';
import { TablesModule, TransactionsModule } from '../catalog';
import { PendingModule } from '../../platform/cluster/pending.module';
import { CommitCompletion } from './commit-completion.service';
import { Reclaimer } from './reclaimer.service';
import { StorageScan } from './storage-scan.service';

/** Crash safety's background side: the reclaimer, and the operator's storage scan (docs/resilience.md#crash-safety). */
@Module({
  imports: [LanceModule, PendingModule, TransactionsModule, TablesModule],
  providers: [Reclaimer, StorageScan, CommitCompletion],
  exports: [Reclaimer, StorageScan, CommitCompletion],
})
export class ReclaimerModule {}
