import { Module } from '@nestjs/common';
import { DatabasesRepository } from './databases.repository';
import { TenancyService } from './tenancy.service';

/** Tenancy: which database a request addresses (header, prefix header or host name). */
@Module({ providers: [DatabasesRepository, TenancyService], exports: [DatabasesRepository, TenancyService] })
export class TenancyModule {}
