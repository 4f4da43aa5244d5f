import { Module } from '@nestjs/common';
import { AuthModule } from '../../identity';
import { ThrottlingModule } from '../../throttling';
import { TransactionsModule } from '../transactions/transactions.module';
import { DroppedCoreModule } from '../dropped/dropped-core.module';
import { LanceModule } from '../../../engine/lance/lance.module';
import { NamespacesController } from './namespaces.controller';
import { NamespacesRepository } from './namespaces.repository';
import { NamespacesService } from './namespaces.service';

@Module({
  imports: [AuthModule, TransactionsModule, ThrottlingModule, DroppedCoreModule, LanceModule],
  controllers: [NamespacesController],
  providers: [NamespacesRepository, NamespacesService],
  exports: [NamespacesRepository, NamespacesService],
})
export class NamespacesModule {}
