import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { PATH_SEP } from '../../../platform/http/ids';
import { CatalogClient, UnitOfWork } from '../../../platform/db/unit-of-work';
import { Scope } from '../../identity';
import { keepingCloneSources } from '../tables/clone-source';

export interface NamespaceRow {
  id: string;
  path: string;
  name: string;
  properties: Record<string, string>;
  createdAt: Date;
}

/** First string sorting after every descendant path of `path` (PATH_SEP is U+001F, so U+0020 is its successor). */
export const descendantsUpper = (path: string) => `${path}\u0020`;
export const descendantsLower = (path: string) => `${path}${PATH_SEP}`;

export type DropOutcome =
  | { kind: 'not-found' }
  | { kind: 'not-empty'; children: number }
  | {
      kind: 'dropped';
      locations: string[];
      transactionId?: string;
      dropped?: Array<{ namespacePath: string; name: string; location: string; lastVersion: number | null }>;
    };

/**
 * What a drop asks of its caller (soft-delete, protection): `guard` runs once the namespace (and, in a cascade, its
 * whole subtree) is locked, and throws to refuse the drop; `moveTables`, in a cascade, removes the subtree's tables
 * instead of deleting their rows (a soft delete profile), returning what it moved.
 */
export interface DropHooks {
  guard?: () => Promise<void>;
  moveTables?: () => Promise<Array<{ namespacePath: string; name: string; location: string; lastVersion: number | null }>>;
}

@Injectable()
export class NamespacesRepository {
  constructor(private readonly uow: UnitOfWork) {}

  private get db(): CatalogClient {
    return this.uow.db;
  }

  async find(scope: Scope, path: string): Promise<NamespaceRow | null> {
    const row = await this.db.namespace.findUnique({
      where: { databaseId_catalog_path: { databaseId: scope.databaseId, catalog: scope.catalog, path } },
    });
    return row && { ...row, properties: row.properties as Record<string, string> };
  }

  /**
   * Takes a share lock on a namespace row, so it cannot be dropped until the caller's transaction ends.
   * Returns false when the namespace does not exist. The root ('') always exists.
   */
  async lockShared(scope: Scope, path: string): Promise<boolean> {
    if (path === '') return true;
    const rows = await this.db.$queryRaw<{ id: string }[]>`
      SELECT id FROM namespaces
       WHERE database_id = ${scope.databaseId}::uuid AND catalog = ${scope.catalog} AND path = ${path}
       FOR SHARE`;
    return rows.length > 0;
  }

  /** Inserts a namespace; null when one with that path already exists (concurrent creators: exactly one wins). */
  async insert(
    scope: Scope,
    ns: { path: string; parentPath: string; name: string; properties: Record<string, string> },
  ): Promise<NamespaceRow | null> {
    const rows = await this.db.$queryRaw<NamespaceRow[]>`
      INSERT INTO namespaces (id, database_id, catalog, path, parent_path, name, properties)
      VALUES (${randomUUID()}::uuid, ${scope.databaseId}::uuid, ${scope.catalog}, ${ns.path}, ${ns.parentPath},
              ${ns.name}, ${JSON.stringify(ns.properties)}::jsonb)
      ON CONFLICT (database_id, catalog, path) DO NOTHING
      RETURNING id, path, name, properties, created_at AS "createdAt"`;
    return rows[0] ?? null;
  }

  /** Direct children of `parentPath`, by name, starting after `after`; `only`: just these names. */
  async listChildren(scope: Scope, parentPath: string, after: string | undefined, take: number, only?: string[]): Promise<string[]> {
    const rows = await this.db.namespace.findMany({
      where: {
        databaseId: scope.databaseId,
        catalog: scope.catalog,
        parentPath,
        ...(after !== undefined || only ? { name: { ...(after !== undefined ? { gt: after } : {}), ...(only ? { in: only } : {}) } } : {}),
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
  async drop(scope: Scope, path: string, cascade: boolean, hooks: DropHooks = {}): Promise<DropOutcome> {
    const locked = await this.db.$queryRaw<{ id: string }[]>`
      SELECT id FROM namespaces
       WHERE database_id = ${scope.databaseId}::uuid AND catalog = ${scope.catalog} AND path = ${path}
       FOR UPDATE`;
    if (locked.length === 0) return { kind: 'not-found' };
    if (!cascade) {
      const [{ n }] = await this.db.$queryRaw<{ n: number }[]>`
        SELECT ((SELECT count(*) FROM namespaces
                  WHERE database_id = ${scope.databaseId}::uuid AND catalog = ${scope.catalog}
                    AND parent_path = ${path})
              + (SELECT count(*) FROM tables
                  WHERE database_id = ${scope.databaseId}::uuid AND catalog = ${scope.catalog}
                    AND namespace_path = ${path}))::int AS n`;
      if (n > 0) return { kind: 'not-empty', children: n };
      await hooks.guard?.();
      await this.db.$executeRaw`DELETE FROM namespaces WHERE id = ${locked[0].id}::uuid`;
      return { kind: 'dropped', locations: [] };
    }
    const lo = descendantsLower(path);
    const hi = descendantsUpper(path);
    if (hooks.guard) {
      // The whole subtree locked first: a protection flag being set under it has committed before the guard looks.
      await this.db.$queryRaw`
        SELECT id FROM namespaces
         WHERE database_id = ${scope.databaseId}::uuid AND catalog = ${scope.catalog}
           AND (path = ${path} OR (path >= ${lo} AND path < ${hi}))
         FOR UPDATE`;
      await hooks.guard();
    }
    // Namespaces first: this waits for any writer holding a share lock on a descendant, so the table delete
    // below (a fresh snapshot under READ COMMITTED) sees every table such a writer committed.
    await this.db.$executeRaw`
      DELETE FROM namespaces
       WHERE database_id = ${scope.databaseId}::uuid AND catalog = ${scope.catalog}
         AND (path = ${path} OR (path >= ${lo} AND path < ${hi}))`;
    if (hooks.moveTables) return { kind: 'dropped', locations: [], dropped: await hooks.moveTables() };
    const dropped = await keepingCloneSources(this.db.$queryRaw<{ location: string }[]>`
      DELETE FROM tables
       WHERE database_id = ${scope.databaseId}::uuid AND catalog = ${scope.catalog}
         AND (namespace_path = ${path} OR (namespace_path >= ${lo} AND namespace_path < ${hi}))
       RETURNING location`);
    const locations = dropped.map((d) => d.location);
    return { kind: 'dropped', locations };
  }
}
