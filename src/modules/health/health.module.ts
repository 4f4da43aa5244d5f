import { Module } from '@nestjs/common';
import { StorageModule } from '../../engine/storage/storage.module';
import { RedisModule } from '../../platform/redis/redis.module';
import { HealthController } from './health.controller';
import { HealthRepository } from './health.repository';

/** Liveness and readiness probes. */
@Module({ imports: [RedisModule, StorageModule], controllers: [HealthController], providers: [HealthRepository] })
export class HealthModule {}
