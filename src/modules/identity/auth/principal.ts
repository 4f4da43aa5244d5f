import type { Quotas } from '../../../platform/config/config';
import type { NetworkRules, RateLimit } from '../tenancy/tenant-context';
import type { Role } from './api-keys.repository';

/** Who is calling, once a credential has been verified. */
export type Principal =
  | {
      kind: 'key';
      /** API key id (never its secret). */
      id: string;
      role: Role;
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
      /** From the `scope` claim; null when it grants none of read/write/admin. */
      role: Role | null;
      /** From the databases claim: the names the token may use, or '*' for all. */
      databases: '*' | string[];
    };

/** How a principal appears in audit records and logs. */
export const principalLabel = (p: Principal): string => (p.kind === 'key' ? `key:${p.id}` : `token:${p.subject}`);

/** Whether the principal may address the named database at all (its role is checked separately). */
export function mayUseDatabase(p: Principal, name: string): boolean {
  if (p.kind === 'key') return p.databaseName === name;
  return p.databases === '*' || p.databases.includes(name);
}
