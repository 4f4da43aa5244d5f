import { SetMetadata } from '@nestjs/common';

export const AUDITED = 'lgw:audited';

export interface AuditSpec {
  action: string;
  /** Extra details from the request body and the handler's result (never secrets). */
  details?: (body: any, result: any) => Record<string, unknown>;
}

/** Records a successful call of the route in the audit trail (see AuditInterceptor). */
export const Audited = (action: string, details?: AuditSpec['details']) => SetMetadata(AUDITED, { action, details } satisfies AuditSpec);
