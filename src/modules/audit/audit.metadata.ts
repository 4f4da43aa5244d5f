/** Metadata of @Audited routes, read by AuditInterceptor. */
export const AUDITED = 'lgw:audited';

export interface AuditSpec {
  action: string;
  /** Extra details from the request body and the handler's result (never secrets). */
  details?: (body: any, result: any) => Record<string, unknown>;
}
