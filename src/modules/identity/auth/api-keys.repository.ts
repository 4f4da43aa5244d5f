import { Injectable } from '@nestjs/common';
import { CatalogClient, UnitOfWork } from '../../../platform/db/unit-of-work';
import type { Role } from '../../../platform/http/route-access';

export type { Role };

export interface ApiKeyRow {
  id: string;
  databaseId: string;
  role: Role;
  description: string | null;
  createdAt: Date;
  expiresAt: Date | null;
  revokedAt: Date | null;
}

export type KeyWithDatabase = ApiKeyRow & {
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

const PUBLIC_COLUMNS = {
  id: true,
  databaseId: true,
  role: true,
  description: true,
  createdAt: true,
  expiresAt: true,
  revokedAt: true,
} as const;

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
    expiresAt?: Date;
  }): Promise<ApiKeyRow> {
    return (await this.db.apiKey.create({ data: k, select: PUBLIC_COLUMNS })) as ApiKeyRow;
  }

  /** The key with this secret hash, with its database's name, rate limit, quotas and network rules (one round trip). */
  async findByHash(hash: string): Promise<KeyWithDatabase | null> {
    const rows = await this.db.$queryRaw<KeyWithDatabase[]>`
      SELECT k.id, k.database_id AS "databaseId", k.role, k.description, k.created_at AS "createdAt",
             k.expires_at AS "expiresAt", k.revoked_at AS "revokedAt", k.hash, d.name AS "databaseName",
             d.rate_limit_limit AS "rateLimitLimit", d.rate_limit_window_ms AS "rateLimitWindowMs",
             d.max_tables AS "maxTables", d.max_namespaces AS "maxNamespaces",
             d.max_storage_bytes::float8 AS "maxStorageBytes", d.max_rows_per_write::float8 AS "maxRowsPerWrite",
             d.allowed_cidrs AS "allowedCidrs", d.private_only AS "privateOnly"
        FROM api_keys k JOIN databases d ON d.id = k.database_id
       WHERE k.hash = ${hash}`;
    return rows[0] ?? null;
  }

  async listByDatabase(databaseId: string): Promise<ApiKeyRow[]> {
    return (await this.db.apiKey.findMany({
      where: { databaseId },
      orderBy: { createdAt: 'asc' },
      select: PUBLIC_COLUMNS,
    })) as ApiKeyRow[];
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
