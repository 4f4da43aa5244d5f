import { Global, Module } from '@nestjs/common';
import { TenancyModule } from '../identity';
import { AuditInterceptor } from './audit.interceptor';
import { AuditRefusals } from './audit-refusals';
import { AuditRepository } from './audit.repository';
import { AuditService } from './audit.service';

/**
 * The audit trail, recorded by AuditInterceptor on routes marked @Audited (global: any controller may audit), and the
 * refused requests (AuditRefusals).
 */
@Global()
@Module({
  imports: [TenancyModule],
  providers: [AuditRepository, AuditService, AuditInterceptor, AuditRefusals],
  exports: [AuditService, AuditInterceptor, AuditRefusals],
})
export class AuditModule {}
