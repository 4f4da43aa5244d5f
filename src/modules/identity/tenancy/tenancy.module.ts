import { Module } from '@nestjs/common';
import { CacheInvalidationsRepository } from './cache-invalidations.repository';
import { DatabasesRepository } from './databases.repository';
import { TenancyService } from './tenancy.service';

/** Tenancy: which database a request addresses (header, prefix header or host name). */
@Module({
  providers: [DatabasesRepository, CacheInvalidationsRepository, TenancyService],
  exports: [DatabasesRepository, CacheInvalidationsRepository, TenancyService],
})
export class TenancyModule {}
