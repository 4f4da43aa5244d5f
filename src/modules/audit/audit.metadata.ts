/** Metadata of @Audited routes, read by AuditInterceptor. */
export const AUDITED = 'lgw:audited';

export interface AuditSpec {
  action: string;
  /**
   * Details from the request body (never secrets). What only the change itself knows (a new version, a key's id)
   * the service adds when it writes the record.
   */
  details?: (body: any) => Record<string, unknown>;
}
