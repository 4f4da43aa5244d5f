/**
 * The floor for the catalog benchmark: a bare Fastify + pg server answering what the gateway answers, from the
 * same Postgres, with no framework, auth, tenancy, throttling, logging or validation around it:
 *  - GET /page: the keyset page query of GET /v1/table;
 *  - POST /describe: the table lookup of POST /v1/table/{id}/describe, and, for a table the catalog does not know
 *    to have data (a declared table), the same look at its `_versions` folder the gateway must make, since a
 *    namespace-mode client may have written data there directly.
 * Both with the gateway's key check (issue 37: "the same key check"): the `x-api-key` header's SHA-256 looked up in
 * a cache of key lookups (on a miss, the same join of api_keys and databases, prepared), the digest compared in
 * constant time, a revoked or expired key refused, the key's database required to be the one named.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import Fastify from 'fastify';
import { Pool } from 'pg';

const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const STORAGE_ROOT = process.env.STORAGE_ROOT ?? '/nonexistent';
const app = Fastify();
const SEP = '\u001f';

interface KeyRow {
  hash: string;
  databaseId: string;
  databaseName: string;
  revokedAt: Date | null;
  expiresAt: Date | null;
}
const keys = new Map<string, { row: KeyRow | null; until: number }>();
const KEY_TTL_MS = 300_000;

/** The gateway's key check: 401 unless the key is active, 403 unless its database is the one named. */
async function checkKey(headers: Record<string, string | string[] | undefined>, db: string): Promise<number> {
  const secret = headers['x-api-key'];
  if (typeof secret !== 'string') return 401;
  const digest = createHash('sha256').update(secret, 'utf8').digest();
  const hex = digest.toString('hex');
  let hit = keys.get(hex);
  if (!hit || hit.until < Date.now()) {
    const { rows } = await pool.query({
      name: 'key_by_hash',
      text: `SELECT k.hash, k.database_id AS "databaseId", d.name AS "databaseName", k.revoked_at AS "revokedAt", k.expires_at AS "expiresAt"
               FROM api_keys k JOIN databases d ON d.id = k.database_id WHERE k.hash = $1`,
      values: [hex],
    });
    hit = { row: rows[0] ?? null, until: Date.now() + KEY_TTL_MS };
    keys.set(hex, hit);
  }
  const row = hit.row;
  if (!row || !timingSafeEqual(Buffer.from(row.hash, 'hex'), digest)) return 401;
  if (row.revokedAt || (row.expiresAt && row.expiresAt.getTime() <= Date.now())) return 401;
  return row.databaseId === db ? 0 : 403;
}

app.get('/page', async (req, reply) => {
  const q = req.query as { db: string; after?: string; limit?: string };
  const refused = await checkKey(req.headers, q.db);
  if (refused) return reply.code(refused).send({ error: 'refused' });
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
  const refused = await checkKey(req.headers, q.db);
  if (refused) return reply.code(refused).send({ error: 'refused' });
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
