import { Client } from 'pg';

/** The Postgres server the benchmarks make their scratch databases on. */
export const ADMIN_URL = process.env.BENCH_PG_URL ?? process.env.TEST_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';

/** The URL of database `db` on the same server. */
export const urlFor = (db: string) => Object.assign(new URL(ADMIN_URL), { pathname: `/${db}` }).toString();

/** One statement on a short-lived connection. */
export async function sql<T = any>(url: string, text: string, params: unknown[] = []): Promise<T[]> {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(text, params)).rows;
  } finally {
    await c.end();
  }
}
