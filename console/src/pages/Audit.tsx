import type { Db } from '../db';

/** Not built yet. */
export function Audit(_props: { db: Db }) {
  return <p>Not built yet.</p>;
}
