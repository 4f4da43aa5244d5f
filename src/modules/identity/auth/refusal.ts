import { displayId } from '../../../platform/http/ids';
import type { ApiError, Refusal } from '../../../platform/http/errors';
import type { ObjectKind, Privilege } from './grants';
import type { TenantContext } from '../tenancy/tenant-context';

/** Who was refused, and where: what every refusal record carries. */
export type RefusalContext = Pick<Refusal, 'actor' | 'operation' | 'databaseId' | 'databaseName'>;

/**
 * Marks `error` as a refused request so that the audit trail records who, what, which object and why
 * (AuditRefusals); the caller's answer is the error as it is.
 */
export function refused(
  error: ApiError,
  who: RefusalContext,
  reason: string,
  object?: { kind: ObjectKind; path: readonly string[] },
): ApiError {
  error.refusal = { ...who, reason, target: object ? `${object.kind} ${displayId(object.path)}` : 'database' };
  return error;
}

/**
 * For a service checking an object its route's guard did not (a rename's destination, a clone's source, what an
 * overwrite replaces): the refusal, recorded like the guard's, unless the credential holds `privilege` on it.
 * `refusal` overrides the answer for an object the caller cannot see (when the route names it otherwise than by id).
 */
export function requireOn(
  t: TenantContext,
  privilege: Privilege,
  kind: ObjectKind,
  path: readonly string[],
  opts: { creating?: boolean; hidden?: () => ApiError } = {},
): void {
  if (t.access.may(privilege, kind, path)) return;
  const error = opts.hidden && !t.access.visible(kind, path) ? opts.hidden() : t.access.refusal(privilege, kind, path, opts.creating);
  const who = { actor: t.principal, operation: t.operation ?? '(service)', databaseId: t.database.id, databaseName: t.database.name };
  throw refused(error, who, `needs ${privilege}`, { kind, path });
}
