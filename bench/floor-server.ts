/**
 * The floor for the catalog benchmark: a bare Fastify + pg server answering what the gateway answers, from the
 * same Postgres, with no framework, auth, tenancy, throttling, logging or validation around it:
 *  - GET /page: the keyset page query of GET /v1/table;
 *  - POST /describe: the table lookup of POST /v1/table/{id}/describe, and, for a table the catalog does not know
 *    to have data (a declared table), the same look at its `_versions` folder the gateway must make, since a
 *    namespace-mode client may have written data there directly.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import Fastify from 'fastify';
import { Pool } from 'pg';

const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const STORAGE_ROOT = process.env.STORAGE_ROOT ?? '/nonexistent';
const app = Fastify();
const SEP = '\u001f';

app.get('/page', async (req) => {
  const q = req.query as { db: string; after?: string; limit?: string };
  const limit = Number(q.limit ?? 100);
  const after = q.after ? (JSON.parse(Buffer.from(q.after, 'base64url').toString()) as [string, string]) : ['', ''];
  const { rows } = await pool.query(
    `SELECT namespace_path, name FROM tables
      WHERE database_id = $1 AND catalog = '' AND (namespace_path, name) > ($2, $3)
      ORDER BY namespace_path, name LIMIT $4`,
    [q.db, after[0], after[1], limit + 1],
  );
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    tables: page.map((r) => [...(r.namespace_path ? r.namespace_path.split(SEP) : []), r.name].join('$')),
    ...(rows.length > limit ? { page_token: Buffer.from(JSON.stringify([last.namespace_path, last.name])).toString('base64url') } : {}),
  };
});

async function hasData(abs: string): Promise<boolean> {
  try {
    return (await fs.promises.readdir(path.join(abs, '_versions'))).some((e) => e.endsWith('.manifest'));
  } catch {
    return false;
  }
}

app.post('/describe', async (req, reply) => {
  const q = req.query as { db: string; id: string };
  const id = q.id.split('$');
  const ns = id.slice(0, -1);
  const name = id[id.length - 1];
  const { rows } = await pool.query(
    `SELECT id, location, properties, materialized_at FROM tables
      WHERE database_id = $1 AND catalog = '' AND namespace_path = $2 AND name = $3`,
    [q.db, ns.join(SEP), name],
  );
  if (!rows[0]) return reply.code(404).send({ error: 'not found' });
  const abs = path.resolve(STORAGE_ROOT, rows[0].location);
  if (!rows[0].materialized_at && (await hasData(abs))) throw new Error('the floor describes declared tables only');
  return { table: name, namespace: ns, location: abs, table_uri: abs, properties: rows[0].properties };
});

app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' }).then(() => process.send?.('ready'));
process.on(
  'SIGTERM',
  () =>
    void app
      .close()
      .then(() => pool.end())
      .then(() => process.exit(0)),
);
