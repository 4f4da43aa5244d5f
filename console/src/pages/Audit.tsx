import type { Db } from '../db';

/** Not built yet. */
export function Audit({ db }: { db: Db }) {
  return <p>Not built yet for database {db.name}.</p>;
}
