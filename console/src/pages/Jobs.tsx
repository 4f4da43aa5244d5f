import type { Db } from '../db';

/** Not built yet. */
export function Jobs(_props: { db: Db }) {
  return <p>Not built yet.</p>;
}
