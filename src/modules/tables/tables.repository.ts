import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { isUniqueViolation } from '../../database/prisma-errors';
import { Scope } from '../tenancy/tenant-context';
import { CatalogClient, UnitOfWork } from '../../database/unit-of-work';

export interface TableRow {
  id: string;
  namespacePath: string;
  name: string;
  location: string;
  properties: Record<string, string>;
  materializedAt: Date | null;
  createdAt: Date;
}

/** What a listing needs: the key, and enough to tell declared-only tables apart. */
export type TableListRow = Pick<TableRow, 'id' | 'namespacePath' | 'name' | 'location' | 'materializedAt'>;

const SELECT_COLUMNS = {
  id: true,
  namespacePath: true,
  name: true,
  location: true,
  properties: true,
  materializedAt: true,
  createdAt: true,
} as const;

@Injectable()
export class TablesRepository {
  constructor(private readonly uow: UnitOfWork) {}

  private get db(): CatalogClient {
    return this.uow.db;
  }

  async find(scope: Scope, namespacePath: string, name: string): Promise<TableRow | null> {
    const row = await this.db.catalogTable.findUnique({
      where: {
        databaseId_catalog_namespacePath_name: {
          databaseId: scope.databaseId,
          catalog: scope.catalog,
          namespacePath,
          name,
        },
      },
      select: SELECT_COLUMNS,
    });
    return row as TableRow | null;
  }

  /**
   * Inserts a table row. 'name-taken' when the name exists (concurrent creators: exactly one wins);
   * 'location-taken' when another entry already uses the storage folder (then the transaction is aborted).
   */
  async insert(scope: Scope,
    t: { namespacePath: string; name: string; location: string; properties: Record<string, string>; materialized: boolean },
  ): Promise<TableRow | 'name-taken' | 'location-taken'> {
    try {
      const rows = await this.insertRow(scope, t);
      return rows[0] ?? 'name-taken';
    } catch (err) {
      if (isUniqueViolation(err)) return 'location-taken';
      throw err;
    }
  }

  private insertRow(scope: Scope,
    t: { namespacePath: string; name: string; location: string; properties: Record<string, string>; materialized: boolean },
  ): Promise<TableRow[]> {
    return this.db.$queryRaw<TableRow[]>`
      INSERT INTO tables (id, database_id, catalog, namespace_path, name, location, properties, materialized_at)
      VALUES (${randomUUID()}::uuid, ${scope.databaseId}::uuid, ${scope.catalog}, ${t.namespacePath}, ${t.name},
              ${t.location}, ${JSON.stringify(t.properties)}::jsonb,
              CASE WHEN ${t.materialized} THEN now() ELSE NULL END)
      ON CONFLICT (database_id, catalog, namespace_path, name) DO NOTHING
      RETURNING id, namespace_path AS "namespacePath", name, location, properties,
                materialized_at AS "materializedAt", created_at AS "createdAt"`;
  }

  async deleteById(id: string): Promise<TableRow | null> {
    const rows = await this.db.$queryRaw<TableRow[]>`
      DELETE FROM tables WHERE id = ${id}::uuid
      RETURNING id, namespace_path AS "namespacePath", name, location, properties,
                materialized_at AS "materializedAt", created_at AS "createdAt"`;
    return rows[0] ?? null;
  }

  /** Deletes by name; returns the removed row, or null when there was none. */
  async delete(scope: Scope, namespacePath: string, name: string): Promise<TableRow | null> {
    const rows = await this.db.$queryRaw<TableRow[]>`
      DELETE FROM tables
       WHERE database_id = ${scope.databaseId}::uuid AND catalog = ${scope.catalog}
         AND namespace_path = ${namespacePath} AND name = ${name}
      RETURNING id, namespace_path AS "namespacePath", name, location, properties,
                materialized_at AS "materializedAt", created_at AS "createdAt"`;
    return rows[0] ?? null;
  }

  /** Moves a table row to another name/namespace. 'exists' when the destination name is taken. */
  async rename(id: string, namespacePath: string, name: string): Promise<'ok' | 'exists' | 'gone'> {
    try {
      const n = await this.db.$executeRaw`
        UPDATE tables SET namespace_path = ${namespacePath}, name = ${name} WHERE id = ${id}::uuid`;
      return n === 1 ? 'ok' : 'gone';
    } catch (err) {
      if (isUniqueViolation(err)) return 'exists';
      throw err;
    }
  }

  async listInNamespace(scope: Scope, namespacePath: string, after: string | undefined, take: number): Promise<TableListRow[]> {
    const rows = await this.db.catalogTable.findMany({
      where: {
        databaseId: scope.databaseId,
        catalog: scope.catalog,
        namespacePath,
        ...(after !== undefined ? { name: { gt: after } } : {}),
      },
      orderBy: { name: 'asc' },
      take,
      select: { id: true, namespacePath: true, name: true, location: true, materializedAt: true },
    });
    return rows;
  }

  /**
   * Every table of the scope in (namespace_path, name) order, keyset-paginated on the unique index: constant cost
   * per page. The first page starts after ('', ''), which precedes every row (names are never empty).
   */
  async listAll(scope: Scope, after: [string, string] | undefined, take: number): Promise<TableListRow[]> {
    const [afterPath, afterName] = after ?? ['', ''];
    return this.db.$queryRaw<TableListRow[]>`
      SELECT id, namespace_path AS "namespacePath", name, location, materialized_at AS "materializedAt"
        FROM tables
       WHERE database_id = ${scope.databaseId}::uuid AND catalog = ${scope.catalog}
         AND (namespace_path, name) > (${afterPath}, ${afterName})
       ORDER BY namespace_path, name
       LIMIT ${take}`;
  }

  async markMaterialized(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.db.catalogTable.updateMany({
      where: { id: { in: ids }, materializedAt: null },
      data: { materializedAt: new Date() },
    });
  }
}
