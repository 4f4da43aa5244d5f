import type { Quotas } from '../../../platform/config/config';
import type { NetworkRules, RateLimit } from '../tenancy/tenant-context';
import type { Access } from './grants';

/** Who is calling, once a credential has been verified. */
export type Principal =
  | {
      kind: 'key';
      /** API key id (never its secret). */
      id: string;
      /** Its role's privileges, narrowed by its grants (compiled once per cached lookup). */
      access: Access;
      /** An API key belongs to exactly one database. */
      databaseId: string;
      databaseName: string;
      databaseRateLimit: RateLimit;
      databaseQuotas: Quotas;
      /** The database's network rules, from the same cached lookup. */
      databaseNetwork: NetworkRules;
      /** The key's own limit inside its database's; null: only the database's. */
      keyRateLimit: RateLimit;
    }
  | {
      kind: 'token';
      /** The token's `sub` claim. */
      subject: string;
      /** The `scope` claim's role narrowed by the grants claim; null when the scope grants none of read/write/admin. */
      access: Access | null;
      /** From the databases claim: the names the token may use, or '*' for all. */
      databases: '*' | string[];
    }
  | {
      /**
       * The operator key (ADMIN_API_KEY) on a database's REST routes: an admin of every database, named by the request
       * like a token's. It could create itself such a key anyway; acting directly keeps the audit trail saying 'operator'.
       */
      kind: 'operator';
      access: Access;
    };

/** How a principal appears in audit records and logs. */
export const principalLabel = (p: Principal): string =>
  p.kind === 'key' ? `key:${p.id}` : p.kind === 'token' ? `token:${p.subject}` : 'operator';

/** Whether the principal may address the named database at all (its privileges are checked separately). */
export function mayUseDatabase(p: Principal, name: string): boolean {
  if (p.kind === 'key') return p.databaseName === name;
  if (p.kind === 'operator') return true;
  return p.databases === '*' || p.databases.includes(name);
}
