import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { CatalogClient, UnitOfWork } from '../../../platform/db/unit-of-work';
import type { PendingValues } from '../../../platform/cluster/pending-locations.repository';
import type { Quotas } from '../../../platform/config/config';

export interface DatabaseRow {
  id: string;
  name: string;
  properties: Record<string, string>;
  createdAt: Date;
  rateLimitLimit: number | null;
  rateLimitWindowMs: number | null;
  storageProfile: string;
  managedVersioning: boolean;
  /** Quotas (null: the gateway's default); bigint columns come back as bigint or string, see quotasOf. */
  maxTables: number | null;
  maxNamespaces: number | null;
  maxStorageBytes: number | bigint | string | null;
  maxRowsPerWrite: number | bigint | string | null;
  /** Delete profile (null: the server's) and protection (docs/soft-delete.md). */
  dropProfile?: string | null;
  dropRetentionSeconds?: number | null;
  protected?: boolean;
  /** Network rules (docs/access-control.md): source CIDRs (empty: any) and private-only. */
  allowedCidrs?: string[];
  privateOnly?: boolean;
}

/** A change of quotas: undefined fields unchanged, null back to the default. */
export type QuotasInput = Quotas;

export type RateLimitInput = { limit: number; windowMs: number } | null;

/** What UpdateDatabase may change (undefined: unchanged). */
export interface DatabaseChange {
  properties?: Record<string, string>;
  rateLimit?: RateLimitInput;
  storageProfile?: string;
  managedVersioning?: boolean;
  quotas?: QuotasInput;
  dropProfile?: 'hard' | 'soft' | null;
  dropRetentionSeconds?: number | null;
  protected?: boolean;
  /** Network rules: allowed source CIDRs (normalized; [] for any) and private-only. */
  allowedCidrs?: string[];
  privateOnly?: boolean;
}

@Injectable()
export class DatabasesRepository {
  constructor(private readonly uow: UnitOfWork) {}

  private get db(): CatalogClient {
    return this.uow.db;
  }

  /** null when the name is taken. */
  async insert(
    name: string,
    properties: Record<string, string>,
    rateLimit: RateLimitInput = null,
    storageProfile = 'default',
    managedVersioning = false,
    quotas: QuotasInput = {},
  ): Promise<DatabaseRow | null> {
    const rows = await this.db.$queryRaw<DatabaseRow[]>`
      INSERT INTO databases (id, name, properties, rate_limit_limit, rate_limit_window_ms, storage_profile, managed_versioning,
                             max_tables, max_namespaces, max_storage_bytes, max_rows_per_write)
      VALUES (${randomUUID()}::uuid, ${name}, ${JSON.stringify(properties)}::jsonb,
              ${rateLimit?.limit ?? null}::int, ${rateLimit?.windowMs ?? null}::int, ${storageProfile}, ${managedVersioning},
              ${quotas.maxTables ?? null}::int, ${quotas.maxNamespaces ?? null}::int,
              ${quotas.maxStorageBytes ?? null}::bigint, ${quotas.maxRowsPerWrite ?? null}::bigint)
      ON CONFLICT (name) DO NOTHING
      RETURNING id, name, properties, created_at AS "createdAt",
                rate_limit_limit AS "rateLimitLimit", rate_limit_window_ms AS "rateLimitWindowMs", storage_profile AS "storageProfile",
                managed_versioning AS "managedVersioning",
                max_tables AS "maxTables", max_namespaces AS "maxNamespaces",
                max_storage_bytes::float8 AS "maxStorageBytes", max_rows_per_write::float8 AS "maxRowsPerWrite"`;
    return rows[0] ?? null;
  }

  /** Changes properties and/or the rate limit (undefined: unchanged; a null limit: back to the defaults). */
  async update(id: string, change: DatabaseChange): Promise<DatabaseRow> {
    const q = change.quotas ?? {};
    const big = (v: number | null) => (v === null ? null : BigInt(v));
    return (await this.db.database.update({
      where: { id },
      data: {
        ...(change.managedVersioning !== undefined ? { managedVersioning: change.managedVersioning } : {}),
        ...(change.dropProfile !== undefined ? { dropProfile: change.dropProfile } : {}),
        ...(change.dropRetentionSeconds !== undefined ? { dropRetentionSeconds: change.dropRetentionSeconds } : {}),
        ...(change.protected !== undefined ? { protected: change.protected } : {}),
        ...(change.allowedCidrs !== undefined ? { allowedCidrs: change.allowedCidrs } : {}),
        ...(change.privateOnly !== undefined ? { privateOnly: change.privateOnly } : {}),
        ...(q.maxTables !== undefined ? { maxTables: q.maxTables } : {}),
        ...(q.maxNamespaces !== undefined ? { maxNamespaces: q.maxNamespaces } : {}),
        ...(q.maxStorageBytes !== undefined ? { maxStorageBytes: big(q.maxStorageBytes) } : {}),
        ...(q.maxRowsPerWrite !== undefined ? { maxRowsPerWrite: big(q.maxRowsPerWrite) } : {}),
        ...(change.storageProfile !== undefined ? { storageProfile: change.storageProfile } : {}),
        ...(change.properties !== undefined ? { properties: change.properties } : {}),
        ...(change.rateLimit !== undefined
          ? { rateLimitLimit: change.rateLimit?.limit ?? null, rateLimitWindowMs: change.rateLimit?.windowMs ?? null }
          : {}),
      },
    })) as DatabaseRow;
  }

  async findByName(name: string): Promise<DatabaseRow | null> {
    return (await this.db.database.findUnique({ where: { name } })) as DatabaseRow | null;
  }

  async list(after: string | undefined, take: number): Promise<DatabaseRow[]> {
    return (await this.db.database.findMany({
      where: after !== undefined ? { name: { gt: after } } : {},
      orderBy: { name: 'asc' },
      take,
    })) as DatabaseRow[];
  }

  /** The storage profile of a database by id; null when it does not exist. */
  async storageProfileOf(id: string): Promise<string | null> {
    const row = await this.db.database.findUnique({ where: { id }, select: { storageProfile: true } });
    return row?.storageProfile ?? null;
  }

  /** Whether a database (by id) has catalog-managed versions; null when it does not exist. */
  async managedVersioningOf(id: string): Promise<boolean | null> {
    const row = await this.db.database.findUnique({ where: { id }, select: { managedVersioning: true } });
    return row ? row.managedVersioning : null;
  }

  /** A database's own delete profile (nulls: the server's) and protection flag; null when the database is gone. */
  async dropProfileOf(
    databaseId: string,
  ): Promise<{ dropProfile: string | null; dropRetentionSeconds: number | null; protected: boolean } | null> {
    const rows = await this.uow.read<{ dropProfile: string | null; dropRetentionSeconds: number | null; protected: boolean }>(
      `SELECT drop_profile AS "dropProfile", drop_retention_seconds AS "dropRetentionSeconds", protected FROM databases WHERE id = $1::uuid`,
      [databaseId],
      'lgw_database_drop_profile',
    );
    return rows[0] ?? null;
  }

  /** Locks the database row until the unit of work ends (a profile change against concurrent table creation). */
  async lockForUpdate(id: string): Promise<void> {
    await this.db.$queryRaw`SELECT id FROM databases WHERE id = ${id}::uuid FOR UPDATE`;
  }

  /** Whether the database has any table (in any catalog), or storage the gateway is writing for it. */
  async holdsTables(id: string): Promise<boolean> {
    const rows = await this.db.$queryRaw<{ n: number }[]>`
      SELECT 1 AS n FROM tables WHERE database_id = ${id}::uuid
      UNION ALL SELECT 1 FROM pending_locations WHERE database_id = ${id}::uuid
      LIMIT 1`;
    return rows.length > 0;
  }

  async count(): Promise<number> {
    return this.db.database.count();
  }

  /**
   * Removes the database like `delete` and, in the same statement, records its storage folder (`v.location`) as a
   * pending clean-up, so a crash before the folder is gone leaves a record the reclaimer finishes.
   */
  async deleteRecordingCleanup(id: string, v: PendingValues): Promise<boolean> {
    const rows = await this.db.$queryRaw<{ id: string }[]>`
      WITH d AS (DELETE FROM databases WHERE id = ${id}::uuid AND NOT protected RETURNING id, name)
      INSERT INTO pending_locations (id, database_id, database_name, location, kind, request_id, owner)
      SELECT ${v.id}::uuid, d.id, d.name, ${v.location}, 'cleanup', ${v.requestId}, ${v.owner} FROM d
      RETURNING id`;
    return rows.length === 1;
  }

  /** Removes the database and (by foreign-key cascade) its keys, namespaces and tables. */
  async delete(id: string): Promise<boolean> {
    return (await this.db.database.deleteMany({ where: { id } })).count === 1;
  }
}
