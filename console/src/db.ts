import type { components } from '../generated/api';
import type { Api } from './api';

export type Credential = components['schemas']['CredentialResponse'];
export type Privilege = Credential['database_privileges'][number];

/** The database a page is about: the API client addressing it, and what the signed-in credential may do there. */
export interface Db {
  api: Api;
  name: string;
  cred: Credential;
}

/**
 * Whether to offer an action needing `privilege`: held on the database, or (for a key with grants) somewhere in it.
 * Only what the page offers depends on it; the API decides, and the page shows its refusal.
 */
export const can = (db: Db, privilege: Privilege): boolean =>
  db.cred.database_privileges.includes(privilege) || (db.cred.grants ?? []).some((g) => g.privileges.includes(privilege));
