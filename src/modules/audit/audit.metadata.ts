/** Metadata of @Audited routes, read by AuditInterceptor. */
export const AUDITED = 'lgw:audited';

export interface AuditSpec {
  action: string;
  /**
   * Details from the request body (never secrets). What only the change itself knows (a new version, a key's id)
   * the service adds when it writes the record.
   */
  // Each route's own body type; the interceptor passes the validated body it cannot name.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  details?: (body: any) => Record<string, unknown>;
}
