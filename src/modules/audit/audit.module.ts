import { Global, Module } from '@nestjs/common';
import { TenancyModule } from '../identity';
import { AuditInterceptor } from './audit.interceptor';
import { AuditRepository } from './audit.repository';
import { AuditService } from './audit.service';

/** The audit trail, recorded by AuditInterceptor on routes marked @Audited (global: any controller may audit). */
@Global()
@Module({
  imports: [TenancyModule],
  providers: [AuditRepository, AuditService, AuditInterceptor],
  exports: [AuditService, AuditInterceptor],
})
export class AuditModule {}
