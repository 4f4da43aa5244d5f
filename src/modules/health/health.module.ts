import { Module } from '@nestjs/common';
import { StorageModule } from '../../engine/storage/storage.module';
import { RedisModule } from '../../platform/redis/redis.module';
import { HealthController, OperatorHealthController } from './health.controller';
import { HealthRepository } from './health.repository';
import { HealthService } from './health.service';

/** Liveness and readiness probes, and the operator's health report. */
@Module({
  imports: [RedisModule, StorageModule],
  controllers: [HealthController, OperatorHealthController],
  providers: [HealthRepository, HealthService],
})
export class HealthModule {}
