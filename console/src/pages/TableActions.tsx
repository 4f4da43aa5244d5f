import type { Db } from '../db';

/** What may be done to a table from its page (drop, …), offered only to a credential that may. Not built yet. */
export function TableActions({ db, id }: { db: Db; id: string }) {
  return db.cred.role === 'read' ? null : <p class="hint">Actions on {id}: not built yet.</p>;
}
