import type { Db } from '../db';

/** What may be done to a table from its page (drop, …), offered only to a credential that may. */
export function TableActions(_props: { db: Db; id: string }) {
  return null;
}
