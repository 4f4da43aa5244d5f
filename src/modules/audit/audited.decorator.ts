import { applyDecorators, SetMetadata, UseInterceptors } from '@nestjs/common';
import { AuditInterceptor } from './audit.interceptor';
import { AUDITED, AuditSpec } from './audit.metadata';

/**
 * Records a successful call of the route in the audit trail (see AuditInterceptor). The interceptor is applied to
 * the audited routes only: a global one would put every request through Nest's interceptor pipeline.
 */
export const Audited = (action: string, details?: AuditSpec['details']) =>
  applyDecorators(SetMetadata(AUDITED, { action, details } satisfies AuditSpec), UseInterceptors(AuditInterceptor));
