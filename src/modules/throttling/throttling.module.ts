import { ExecutionContext, Module } from '@nestjs/common';
import { ThrottlerModule, ThrottlerStorageService } from '@nestjs/throttler';
import { APP_CONFIG, AppConfig } from '../../platform/config/config';
import { DatabaseThrottlerGuard, limitFor, THROTTLER_NAME } from './database-throttler.guard';
import { RedisModule } from '../../platform/redis/redis.module';
import { RedisConnection } from '../../platform/redis/redis.provider';
import { RedisThrottlerStorage } from './redis-throttler.storage';

/**
 * Rate limiting: @nestjs/throttler with a Redis store when REDIS_URL is set (every replica shares one count),
 * its in-memory store otherwise. Limits are resolved per request from the database (see DatabaseThrottlerGuard).
 */
@Module({
  imports: [
    RedisModule,
    ThrottlerModule.forRootAsync({
      imports: [RedisModule],
      inject: [APP_CONFIG, RedisConnection],
      useFactory: (config: AppConfig, redis: RedisConnection) => ({
        throttlers: [
          {
            name: THROTTLER_NAME,
            limit: (ctx: ExecutionContext) => limitFor(config, ctx).limit,
            ttl: (ctx: ExecutionContext) => limitFor(config, ctx).windowMs,
          },
        ],
        storage: redis.client ? new RedisThrottlerStorage(redis.client) : new ThrottlerStorageService(),
      }),
    }),
  ],
  providers: [DatabaseThrottlerGuard],
  exports: [DatabaseThrottlerGuard, ThrottlerModule, RedisModule], // the guard runs in its users' modules, which need its dependencies
})
export class ThrottlingModule {}
