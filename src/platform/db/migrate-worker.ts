/**
 * Applies the catalog's migrations to a Postgres database in a worker thread (catalog-db.ts `migrate`), so that the
 * serving isolate never runs them: V8 judged allocation sites by what survived during a migration run and kept
 * allocating their objects in the old generation afterwards, which cost the replica that migrated about a third more
 * CPU per catalog request for the rest of its life (docs/adr/0008-memory-tuning.md, 2026-11-28).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Client } from 'pg';
import { applyMigrations } from './migrator';

export interface MigrateJob {
  url: string;
  dir: string;
  connectTimeoutMs: number;
}

/** What the worker posts back: the migrations it applied, or the error (message and SQLSTATE) that stopped it. */
export type MigrateOutcome = { applied: string[] } | { error: { message: string; code?: string } };

async function migrate(job: MigrateJob): Promise<string[]> {
  const client = new Client({ connectionString: job.url, connectionTimeoutMillis: job.connectTimeoutMs });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await applyMigrations(
      {
        query: async (sql, params) => (await client.query(sql, params)).rows,
        exec: async (script) => void (await client.query(script)),
      },
      job.dir,
    );
  } finally {
    await client.end().catch(() => undefined);
  }
}

if (parentPort) {
  const port = parentPort;
  migrate(workerData as MigrateJob).then(
    (applied) => port.postMessage({ applied } satisfies MigrateOutcome),
    (err: Error & { code?: string }) => port.postMessage({ error: { message: err.message, code: err.code } } satisfies MigrateOutcome),
  );
}
