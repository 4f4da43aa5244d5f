import { Global, Module } from '@nestjs/common';
import { PendingModule } from '../../platform/cluster/pending.module';
import { IdempotencyInterceptor } from './idempotency.interceptor';
import { IdempotencyService } from './idempotency.service';
import { RequestOutcomesRepository } from './request-outcomes.repository';

/** Exactly-once keyed writes (global: @Operation puts the interceptor on the write routes of every controller). */
@Global()
@Module({
  imports: [PendingModule],
  providers: [RequestOutcomesRepository, IdempotencyService, IdempotencyInterceptor],
  exports: [IdempotencyService, IdempotencyInterceptor],
})
export class IdempotencyModule {}
