import type { Db } from '../db';

/** Not built yet. */
export function Dropped({ db }: { db: Db }) {
  return <p>Not built yet for database {db.name}.</p>;
}
