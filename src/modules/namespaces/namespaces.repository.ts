import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Prisma, PrismaClient } from '../../generated/prisma/client';
import { PATH_SEP } from '../../common/ids';

export interface Scope {
  databaseId: string;
  catalog: string;
}

export interface NamespaceRow {
  id: string;
  path: string;
  name: string;
  properties: Record<string, string>;
  createdAt: Date;
}

export type Tx = Prisma.TransactionClient;

/** First string sorting after every descendant path of `path` (PATH_SEP is U+001F, so U+0020 is its successor). */
export const descendantsUpper = (path: string) => `${path}\u0020`;
export const descendantsLower = (path: string) => `${path}${PATH_SEP}`;

export type DropOutcome =
  | { kind: 'not-found' }
  | { kind: 'not-empty'; children: number }
  | { kind: 'dropped'; locations: string[]; transactionId?: string };

@Injectable()
export class NamespacesRepository {
  constructor(private readonly prisma: PrismaClient) {}

  transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    return this.prisma.$transaction(fn, { timeout: 30_000, maxWait: 10_000 });
  }

  /** Pass `tx` when called inside a transaction: a second pool connection could deadlock an exhausted pool. */
  async find(scope: Scope, path: string, tx: Tx = this.prisma): Promise<NamespaceRow | null> {
    const row = await tx.namespace.findUnique({
      where: { databaseId_catalog_path: { databaseId: scope.databaseId, catalog: scope.catalog, path } },
    });
    return row && { ...row, properties: row.properties as Record<string, string> };
  }

  /**
   * Takes a share lock on a namespace row, so it cannot be dropped until the caller's transaction ends.
   * Returns false when the namespace does not exist. The root ('') always exists.
   */
  async lockShared(tx: Tx, scope: Scope, path: string): Promise<boolean> {
    if (path === '') return true;
    const rows = await tx.$queryRaw<{ id: string }[]>`
      SELECT id FROM namespaces
       WHERE database_id = ${scope.databaseId}::uuid AND catalog = ${scope.catalog} AND path = ${path}
       FOR SHARE`;
    return rows.length > 0;
  }

  /** Inserts a namespace; null when one with that path already exists (concurrent creators: exactly one wins). */
  async insert(
    tx: Tx,
    scope: Scope,
    ns: { path: string; parentPath: string; name: string; properties: Record<string, string> },
  ): Promise<NamespaceRow | null> {
    const rows = await tx.$queryRaw<NamespaceRow[]>`
      INSERT INTO namespaces (id, database_id, catalog, path, parent_path, name, properties)
      VALUES (${randomUUID()}::uuid, ${scope.databaseId}::uuid, ${scope.catalog}, ${ns.path}, ${ns.parentPath},
              ${ns.name}, ${JSON.stringify(ns.properties)}::jsonb)
      ON CONFLICT (database_id, catalog, path) DO NOTHING
      RETURNING id, path, name, properties, created_at AS "createdAt"`;
    return rows[0] ?? null;
  }

  /** Direct children of `parentPath`, by name, starting after `after`. */
  async listChildren(scope: Scope, parentPath: string, after: string | undefined, take: number): Promise<string[]> {
    const rows = await this.prisma.namespace.findMany({
      where: {
        databaseId: scope.databaseId,
        catalog: scope.catalog,
        parentPath,
        ...(after !== undefined ? { name: { gt: after } } : {}),
      },
      orderBy: { name: 'asc' },
      take,
      select: { name: true },
    });
    return rows.map((r) => r.name);
  }

  /**
   * Drops a namespace in one transaction. Restrict: fails when it has children. Cascade: removes every descendant
   * namespace and table row, and records the storage folders to delete as a catalog transaction (cleaned up after
   * commit), so a failure half-way leaves either everything or nothing in the catalog.
   */
  async drop(tx: Tx, scope: Scope, path: string, cascade: boolean): Promise<DropOutcome> {
    const locked = await tx.$queryRaw<{ id: string }[]>`
      SELECT id FROM namespaces
       WHERE database_id = ${scope.databaseId}::uuid AND catalog = ${scope.catalog} AND path = ${path}
       FOR UPDATE`;
    if (locked.length === 0) return { kind: 'not-found' };
    if (!cascade) {
      const [{ n }] = await tx.$queryRaw<{ n: number }[]>`
        SELECT ((SELECT count(*) FROM namespaces
                  WHERE database_id = ${scope.databaseId}::uuid AND catalog = ${scope.catalog}
                    AND parent_path = ${path})
              + (SELECT count(*) FROM tables
                  WHERE database_id = ${scope.databaseId}::uuid AND catalog = ${scope.catalog}
                    AND namespace_path = ${path}))::int AS n`;
      if (n > 0) return { kind: 'not-empty', children: n };
      await tx.$executeRaw`DELETE FROM namespaces WHERE id = ${locked[0].id}::uuid`;
      return { kind: 'dropped', locations: [] };
    }
    const lo = descendantsLower(path);
    const hi = descendantsUpper(path);
    // Namespaces first: this waits for any writer holding a share lock on a descendant, so the table delete
    // below (a fresh snapshot under READ COMMITTED) sees every table such a writer committed.
    await tx.$executeRaw`
      DELETE FROM namespaces
       WHERE database_id = ${scope.databaseId}::uuid AND catalog = ${scope.catalog}
         AND (path = ${path} OR (path >= ${lo} AND path < ${hi}))`;
    const dropped = await tx.$queryRaw<{ location: string }[]>`
      DELETE FROM tables
       WHERE database_id = ${scope.databaseId}::uuid AND catalog = ${scope.catalog}
         AND (namespace_path = ${path} OR (namespace_path >= ${lo} AND namespace_path < ${hi}))
       RETURNING location`;
    const locations = dropped.map((d) => d.location);
    return { kind: 'dropped', locations };
  }
}
