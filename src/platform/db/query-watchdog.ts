import type { Pool } from 'pg';

/**
 * How a pooled `pg` client looks to the watchdog: the query it is running (pg 8 keeps it in `_activeQuery`, null when
 * idle) and its socket. Should a pg release keep them elsewhere, `test/catalog-read.test.ts` fails (its query would run
 * its whole 20 s).
 */
interface WatchedClient {
  _activeQuery?: object | null;
  connection?: { stream?: { destroy(err?: Error): void } };
}

/** The message a query stopped by the watchdog fails with (the same as pg's own `query_timeout`). */
export const QUERY_TIMEOUT_MESSAGE = 'Query read timeout';

/**
 * DB_QUERY_TIMEOUT_MS for every query of a pool: the catalog's own reads and Prisma's alike. A query on a connection
 * whose server vanished (no RST) must not hang its request until TCP gives up, nor hold its pooled connection.
 *
 * Why not pg's own `query_timeout`: it arms a timer and wraps the callback of every query, and with it the rows of
 * each query outlived two young-generation collections (promoted to the old generation: ~10% of all allocation on a
 * list of 100 tables, under 1% without), which cost the catalog's hot reads 12-21% of their throughput (lists) and
 * 7-10% (describes), measured side by side. Here one timer per pool looks at the query each of its connections is
 * running, every quarter of the timeout (at most every second); a query seen running for the timeout has its
 * connection destroyed, which fails it with QUERY_TIMEOUT_MESSAGE, and the pool replaces the connection. A query is
 * thus never stopped before `timeoutMs`, and at the latest two looks after that.
 *
 * Returns the function that stops watching.
 */
export function watchQueries(pool: Pool, timeoutMs: number): () => void {
  const clients = new Set<WatchedClient>();
  /** When each running query was first seen (queries are objects pg makes per call; forgotten with them). */
  const seen = new WeakMap<object, number>();
  pool.on('connect', (client) => void clients.add(client as unknown as WatchedClient));
  pool.on('remove', (client) => void clients.delete(client as unknown as WatchedClient));
  const every = Math.max(10, Math.min(1_000, Math.floor(timeoutMs / 4)));
  const timer = setInterval(() => {
    const now = Date.now();
    for (const client of clients) {
      const query = client._activeQuery;
      if (!query) continue;
      const since = seen.get(query);
      if (since === undefined) seen.set(query, now);
      else if (now - since >= timeoutMs) {
        clients.delete(client);
        client.connection?.stream?.destroy(new Error(QUERY_TIMEOUT_MESSAGE));
      }
    }
  }, every);
  timer.unref();
  return () => clearInterval(timer);
}
