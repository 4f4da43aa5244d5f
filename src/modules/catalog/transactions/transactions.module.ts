import { Module } from '@nestjs/common';
import { StorageModule } from '../../../engine/storage/storage.module';
import { AuthModule } from '../../identity';
import { PendingModule } from '../../../platform/cluster/pending.module';
import { ThrottlingModule } from '../../throttling';
import { TransactionsController } from './transactions.controller';
import { TransactionsRepository } from './transactions.repository';
import { TransactionsService } from './transactions.service';

/** Recorded storage clean-ups (cascade drops) and DescribeTransaction. */
@Module({
  imports: [AuthModule, StorageModule, PendingModule, ThrottlingModule],
  controllers: [TransactionsController],
  providers: [TransactionsRepository, TransactionsService],
  exports: [TransactionsService],
})
export class TransactionsModule {}
