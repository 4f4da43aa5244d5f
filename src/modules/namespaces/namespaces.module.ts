import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { ThrottlingModule } from '../throttling/throttling.module';
import { TransactionsModule } from '../transactions/transactions.module';
import { NamespacesController } from './namespaces.controller';
import { NamespacesRepository } from './namespaces.repository';
import { NamespacesService } from './namespaces.service';

@Module({
  imports: [AuthModule, TransactionsModule, ThrottlingModule],
  controllers: [NamespacesController],
  providers: [NamespacesRepository, NamespacesService],
  exports: [NamespacesRepository, NamespacesService],
})
export class NamespacesModule {}
