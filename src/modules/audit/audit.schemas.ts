import { z } from 'zod';

/** The answer of the audit-trail routes (GET /admin/v1/databases/{name}/audit). */
export const AuditTrailResponse = z
  .object({
    events: z.array(
      z.object({
        id: z.string(),
        actor: z.string().describe('key id, token subject, `operator`, `cli:<user>` or `bootstrap`'),
        action: z.string(),
        target: z.string(),
        details: z.record(z.string(), z.unknown()),
        request_id: z.string().nullable(),
        created_at: z.string(),
      }),
    ),
    page_token: z.string().optional(),
  })
  .meta({ id: 'AuditTrailResponse' });
export type AuditTrailResponse = z.infer<typeof AuditTrailResponse>;
