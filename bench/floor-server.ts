/**
 * The floor for the listing benchmark: a bare Fastify + pg handler running the same keyset page query as the
 * gateway's GET /v1/table, with no framework, auth, tenancy or validation around it.
 */
import Fastify from 'fastify';
import { Pool } from 'pg';

const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
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

app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' }).then(() => process.send?.('ready'));
process.on('SIGTERM', () => void app.close().then(() => pool.end()).then(() => process.exit(0)));
