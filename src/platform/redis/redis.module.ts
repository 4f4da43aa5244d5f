import { Module } from '@nestjs/common';
import { RedisConnection } from './redis.provider';

/** The Redis connection (absent without REDIS_URL), shared by the throttler, readiness and metrics. */
@Module({ providers: [RedisConnection], exports: [RedisConnection] })
export class RedisModule {}
