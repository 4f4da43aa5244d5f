import { Injectable } from '@nestjs/common';
import { CatalogClient, UnitOfWork } from '../../../platform/db/unit-of-work';
import { Prisma } from '../../../generated/prisma/client';
import type { Role } from '../../../platform/http/route-access';
import type { Grant } from './grants';

export type { Role };

export interface ApiKeyRow {
  id: string;
  databaseId: string;
  role: Role;
  description: string | null;
  createdAt: Date;
  expiresAt: Date | null;
  revokedAt: Date | null;
  name: string | null;
  owner: string | null;
  lastUsedAt: Date | null;
  rotatedFrom: string | null;
  keyRateLimitLimit: number | null;
  keyRateLimitWindowMs: number | null;
  /** Null: the role's privileges on the whole database. */
  grants: Grant[] | null;
}

/** What a key's editable fields change to (absent: unchanged). */
export interface KeyChange {
  name?: string | null;
  owner?: string | null;
  expiresAt?: Date | null;
  rateLimit?: { limit: number; windowMs: number } | null;
  /** null: back to the role on the whole database. */
  grants?: Grant[] | null;
}

/**
 * What a request's key check needs of a key and its database (and nothing else: one is cached per active key, so a
 * fleet's replica holds ten thousands of them; docs/production.md, "Caches across replicas").
 */
export type KeyWithDatabase = Pick<
  ApiKeyRow,
  'id' | 'databaseId' | 'role' | 'expiresAt' | 'revokedAt' | 'keyRateLimitLimit' | 'keyRateLimitWindowMs' | 'grants'
> & {
  hash: string;
  databaseName: string;
  rateLimitLimit: number | null;
  rateLimitWindowMs: number | null;
  maxTables: number | null;
  maxNamespaces: number | null;
  maxStorageBytes: number | null;
  maxRowsPerWrite: number | null;
  allowedCidrs: string[];
  privateOnly: boolean;
};

const FIND_BY_HASH = `
  SELECT k.id, k.database_id AS "databaseId", k.role, k.expires_at AS "expiresAt", k.revoked_at AS "revokedAt",
         k.hash, d.name AS "databaseName", k.grants, k.rate_limit_limit AS "keyRateLimitLimit", k.rate_limit_window_ms AS "keyRateLimitWindowMs",
         d.rate_limit_limit AS "rateLimitLimit", d.rate_limit_window_ms AS "rateLimitWindowMs",
         d.max_tables AS "maxTables", d.max_namespaces AS "maxNamespaces",
         d.max_storage_bytes::float8 AS "maxStorageBytes", d.max_rows_per_write::float8 AS "maxRowsPerWrite",
         d.allowed_cidrs AS "allowedCidrs", d.private_only AS "privateOnly"
    FROM api_keys k JOIN databases d ON d.id = k.database_id
   WHERE k.hash = $1`;

const PUBLIC_COLUMNS = {
  id: true,
  databaseId: true,
  role: true,
  description: true,
  createdAt: true,
  expiresAt: true,
  revokedAt: true,
  name: true,
  owner: true,
  lastUsedAt: true,
  rotatedFrom: true,
  rateLimitLimit: true,
  rateLimitWindowMs: true,
  grants: true,
} as const;

type PublicRow = Omit<ApiKeyRow, 'keyRateLimitLimit' | 'keyRateLimitWindowMs'> & {
  rateLimitLimit: number | null;
  rateLimitWindowMs: number | null;
};

/** A JSON column's value: SQL NULL for null (not the JSON literal `null`). */
const jsonOrNull = (v: Grant[] | null | undefined): Prisma.InputJsonValue | typeof Prisma.DbNull =>
  v ? (v as unknown as Prisma.InputJsonValue) : Prisma.DbNull;

/** Prisma's row, with the key's own limit named apart from its database's. */
const toRow = ({ rateLimitLimit, rateLimitWindowMs, ...r }: PublicRow): ApiKeyRow => ({
  ...(r as Omit<ApiKeyRow, 'keyRateLimitLimit' | 'keyRateLimitWindowMs'>),
  keyRateLimitLimit: rateLimitLimit,
  keyRateLimitWindowMs: rateLimitWindowMs,
});

@Injectable()
export class ApiKeysRepository {
  constructor(private readonly uow: UnitOfWork) {}

  private get db(): CatalogClient {
    return this.uow.db;
  }

  async insert(k: {
    id: string;
    databaseId: string;
    hash: string;
    role: Role;
    description?: string;
    expiresAt?: Date | null;
    name?: string | null;
    owner?: string | null;
    rotatedFrom?: string;
    rateLimit?: { limit: number; windowMs: number } | null;
    grants?: Grant[] | null;
  }): Promise<ApiKeyRow> {
    const { rateLimit, grants, ...data } = k;
    const row = await this.db.apiKey.create({
      data: {
        ...data,
        rateLimitLimit: rateLimit?.limit ?? null,
        rateLimitWindowMs: rateLimit?.windowMs ?? null,
        grants: jsonOrNull(grants),
      },
      select: PUBLIC_COLUMNS,
    });
    return toRow(row as PublicRow);
  }

  async find(databaseId: string, id: string): Promise<ApiKeyRow | null> {
    const row = await this.db.apiKey.findFirst({ where: { id, databaseId }, select: PUBLIC_COLUMNS });
    return row ? toRow(row as PublicRow) : null;
  }

  /** Changes a key's editable fields; null when there is no such key in that database. */
  async update(databaseId: string, id: string, change: KeyChange): Promise<ApiKeyRow | null> {
    const data = {
      ...(change.name !== undefined ? { name: change.name } : {}),
      ...(change.owner !== undefined ? { owner: change.owner } : {}),
      ...(change.expiresAt !== undefined ? { expiresAt: change.expiresAt } : {}),
      ...(change.rateLimit !== undefined
        ? { rateLimitLimit: change.rateLimit?.limit ?? null, rateLimitWindowMs: change.rateLimit?.windowMs ?? null }
        : {}),
      ...(change.grants !== undefined ? { grants: jsonOrNull(change.grants) } : {}),
    };
    const { count } = await this.db.apiKey.updateMany({ where: { id, databaseId }, data });
    return count === 1 ? this.find(databaseId, id) : null;
  }

  /** Shortens an active key's life to `until` unless it ends sooner already. */
  async expireBy(id: string, until: Date): Promise<void> {
    await this.db.$executeRaw`
      UPDATE api_keys SET expires_at = LEAST(COALESCE(expires_at, ${until}), ${until})
       WHERE id = ${id}::uuid AND revoked_at IS NULL`;
  }

  /**
   * Records uses in one statement: last_used_at only moves forward. The rows are locked in id order first, whatever
   * order the uses come in and whichever join the planner picks, so two replicas' flushes that share keys take them
   * in the same order and never deadlock (as the usage counters' flush does).
   */
  async touch(uses: { id: string; at: Date }[]): Promise<void> {
    if (uses.length === 0) return;
    const ids = uses.map((u) => u.id);
    const ats = uses.map((u) => u.at.toISOString());
    await this.db.$executeRaw`
      WITH u AS (SELECT * FROM unnest(${ids}::uuid[], ${ats}::timestamptz[]) AS x(id, at)),
      locked AS MATERIALIZED (
        SELECT k.id, u.at FROM api_keys k JOIN u ON u.id = k.id
         WHERE k.last_used_at IS NULL OR k.last_used_at < u.at
         ORDER BY k.id
         FOR UPDATE OF k)
      UPDATE api_keys k SET last_used_at = GREATEST(k.last_used_at, l.at)
        FROM locked l
       WHERE k.id = l.id`;
  }

  /**
   * The key with this secret hash, with its database's name, rate limit, quotas and network rules (one round trip, a
   * prepared statement outside a unit of work: the lookup every request makes when its key is not cached).
   */
  async findByHash(hash: string): Promise<KeyWithDatabase | null> {
    const rows = await this.uow.read<KeyWithDatabase>(FIND_BY_HASH, [hash], 'api_key_by_hash');
    return rows[0] ?? null;
  }

  async listByDatabase(databaseId: string): Promise<ApiKeyRow[]> {
    const rows = await this.db.apiKey.findMany({
      where: { databaseId },
      orderBy: { createdAt: 'asc' },
      select: PUBLIC_COLUMNS,
    });
    return rows.map((r) => toRow(r as PublicRow));
  }

  /** Marks an active key revoked (the row stays, for the audit trail); false when there was none. */
  async revoke(databaseId: string, id: string): Promise<boolean> {
    const { count } = await this.db.apiKey.updateMany({
      where: { id, databaseId, revokedAt: null },
      data: { revokedAt: new Date() },
    });
    return count === 1;
  }
}
