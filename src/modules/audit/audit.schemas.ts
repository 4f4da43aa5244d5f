import { z } from 'zod';
import { PageQuery, queryParam } from '../../platform/http/validation/fields';

/** A filter value of the audit trail: text without control characters, at most 4100 characters (what a target keeps). */
const filterText = (what: string) =>
  queryParam(
    z
      .string({ error: 'must be a string' })
      .max(4100, 'must be at most 4100 characters')
      .regex(/^[^\u0000-\u001f\u007f]*$/, 'must not contain control characters')
      .optional(),
  ).describe(what);

/**
 * The query of GET /admin/v1/databases/{name}/audit: paging, and optional filters combined with AND (each answered
 * from an index on (database_id, <column>, created_at, id), see the migration 20261128200000_audit_filters).
 */
export const AuditQuery = z.object({
  ...PageQuery.shape,
  action: queryParam(
    z
      .string({ error: 'must be a string' })
      .regex(
        /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*\.?$/,
        "must be an action such as 'table.create', or a prefix ending in '.' such as 'table.'",
      )
      .max(100, 'must be at most 100 characters')
      .optional(),
  ).describe('Only events of this action (exact, e.g. `table.create`); a value ending in `.` is a prefix (`table.` = every table action).'),
  actor: filterText('Only events of this actor (exact: `operator`, `key:<key id>`, a token subject, `cli:<user>`, `bootstrap`).'),
  target: filterText(
    'Only events about this target (exact, as the events show it: a table `ns$t` or `<prefix>:ns$t`, a namespace, a key id, the database name).',
  ),
});
export type AuditQuery = z.output<typeof AuditQuery>;

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
