import { Injectable } from '@nestjs/common';
import { CatalogClient, UnitOfWork } from '../../../platform/db/unit-of-work';
import { descendantsLower, descendantsUpper } from '../namespaces/namespaces.repository';
import type { Scope } from '../../identity';
import type { TableRow } from '../tables/tables.repository';
import { PROTECTED_PROPERTY } from '../../databases';
import { keepingCloneSources } from '../tables/clone-source';

/** A table dropped under a soft profile, waiting for its undrop or its purge. */
export interface DroppedRow extends TableRow {
  databaseId: string;
  catalog: string;
  cloneSourceId: string | null;
  lastVersion: number | null;
  storageBytes: number | null;
  droppedAt: Date;
  purgeAfter: Date;
  droppedBy: string;
  requestId: string | null;
}

/** What a soft drop records besides the table row itself. */
export interface SoftDropValues {
  retentionSeconds: number;
  droppedBy: string;
  requestId: string | null;
  /** The latest version of each table, by location, as read before the drop (absent: unknown). */
  versions?: Map<string, number | null>;
}

/** A table that leaves `dropped_tables` to be purged: its pending clean-up record was inserted in the same statement. */
export interface PurgeClaim extends DroppedRow {
  pendingId: string;
  databaseName: string;
}

const droppedColumns = (p = '') => `${p}id, ${p}database_id AS "databaseId", ${p}catalog, ${p}namespace_path AS "namespacePath", ${p}name,
  ${p}location, ${p}properties, ${p}materialized_at AS "materializedAt", ${p}created_at AS "createdAt", ${p}clone_source_id AS "cloneSourceId",
  ${p}last_version::float8 AS "lastVersion", ${p}storage_bytes::float8 AS "storageBytes", ${p}dropped_at AS "droppedAt",
  ${p}purge_after AS "purgeAfter", ${p}dropped_by AS "droppedBy", ${p}request_id AS "requestId"`;
const DROPPED_COLUMNS = droppedColumns();

/**
 * dropped_tables (migration 20261127140000): tables dropped under a soft delete profile. A soft drop moves the row out
 * of `tables` (so no query over live tables, and no name, sees it any more) into here in one statement; an undrop
 * moves it back with the same id; a purge deletes it and records its folder as a pending clean-up in one statement,
 * so a crash leaves the folder to the reclaimer. Also the delete profile and protection flag of databases.
 */
@Injectable()
export class DroppedTablesRepository {
  constructor(private readonly uow: UnitOfWork) {}

  private get db(): CatalogClient {
    return this.uow.db;
  }

  /** Locks a live table row (by name) for its drop; null when there is none. */
  async lockLive(scope: Scope, namespacePath: string, name: string): Promise<(TableRow & { cloneSourceId: string | null }) | null> {
    const rows = await this.db.$queryRaw<Array<TableRow & { cloneSourceId: string | null }>>`
      SELECT id, namespace_path AS "namespacePath", name, location, properties, materialized_at AS "materializedAt",
             created_at AS "createdAt", clone_source_id AS "cloneSourceId"
        FROM tables
       WHERE database_id = ${scope.databaseId}::uuid AND catalog = ${scope.catalog}
         AND namespace_path = ${namespacePath} AND name = ${name}
       FOR UPDATE`;
    return rows[0] ?? null;
  }

  /** Moves one live table (by id) to dropped_tables; null when it is no longer there. */
  async softDrop(id: string, v: SoftDropValues, lastVersion: number | null): Promise<DroppedRow | null> {
    const rows = await keepingCloneSources(
      this.db.$queryRawUnsafe<DroppedRow[]>(
        `WITH d AS (DELETE FROM tables WHERE id = $1::uuid RETURNING *)
       INSERT INTO dropped_tables (id, database_id, catalog, namespace_path, name, location, properties, materialized_at, created_at,
                                   clone_source_id, last_version, storage_bytes, purge_after, dropped_by, request_id)
       SELECT d.id, d.database_id, d.catalog, d.namespace_path, d.name, d.location, d.properties, d.materialized_at, d.created_at,
              d.clone_source_id, $2::bigint, (SELECT u.total_bytes + u.written_bytes FROM table_usage u WHERE u.table_id = d.id),
              now() + $3::int * interval '1 second', $4, $5
         FROM d
       RETURNING ${DROPPED_COLUMNS}`,
        id,
        lastVersion,
        v.retentionSeconds,
        v.droppedBy,
        v.requestId,
      ),
    );
    return rows[0] ?? null;
  }

  /**
   * What in a namespace's subtree (the namespace itself included) is protected: the first protected namespace or
   * table found, as its path (and name), or null. Run after the subtree's namespaces are locked.
   */
  async protectedInSubtree(scope: Scope, path: string): Promise<{ kind: 'namespace' | 'table'; path: string; name?: string } | null> {
    const lo = descendantsLower(path);
    const hi = descendantsUpper(path);
    const ns = await this.db.$queryRaw<{ path: string }[]>`
      SELECT path FROM namespaces
       WHERE database_id = ${scope.databaseId}::uuid AND catalog = ${scope.catalog}
         AND (path = ${path} OR (path >= ${lo} AND path < ${hi}))
         AND lower(properties->>'protected') = 'true'
       LIMIT 1`;
    if (ns[0]) return { kind: 'namespace', path: ns[0].path };
    const t = await this.db.$queryRaw<{ namespacePath: string; name: string }[]>`
      SELECT namespace_path AS "namespacePath", name FROM tables
       WHERE database_id = ${scope.databaseId}::uuid AND catalog = ${scope.catalog}
         AND (namespace_path = ${path} OR (namespace_path >= ${lo} AND namespace_path < ${hi}))
         AND lower(properties->>'protected') = 'true'
       LIMIT 1`;
    return t[0] ? { kind: 'table', path: t[0].namespacePath, name: t[0].name } : null;
  }

  /** The locations of the live tables of a namespace's subtree (to read their versions before a cascade). */
  async locationsInSubtree(scope: Scope, path: string, limit: number): Promise<string[]> {
    const lo = descendantsLower(path);
    const hi = descendantsUpper(path);
    const rows = await this.db.$queryRaw<{ location: string }[]>`
      SELECT location FROM tables
       WHERE database_id = ${scope.databaseId}::uuid AND catalog = ${scope.catalog}
         AND (namespace_path = ${path} OR (namespace_path >= ${lo} AND namespace_path < ${hi}))
       LIMIT ${limit}`;
    return rows.map((r) => r.location);
  }

  /** Moves every table of a namespace's subtree to dropped_tables (a cascade under a soft profile). */
  async softDropSubtree(scope: Scope, path: string, v: SoftDropValues): Promise<DroppedRow[]> {
    const lo = descendantsLower(path);
    const hi = descendantsUpper(path);
    const versions = v.versions ?? new Map<string, number | null>();
    const locs = [...versions.keys()];
    const vers = locs.map((l) => versions.get(l) ?? null);
    return keepingCloneSources(
      this.db.$queryRawUnsafe<DroppedRow[]>(
        `WITH d AS (
         DELETE FROM tables
          WHERE database_id = $1::uuid AND catalog = $2
            AND (namespace_path = $3 OR (namespace_path >= $4 AND namespace_path < $5))
         RETURNING *),
       vs AS (SELECT * FROM unnest($9::text[], $10::bigint[]) AS x(location, version))
       INSERT INTO dropped_tables (id, database_id, catalog, namespace_path, name, location, properties, materialized_at, created_at,
                                   clone_source_id, last_version, storage_bytes, purge_after, dropped_by, request_id)
       SELECT d.id, d.database_id, d.catalog, d.namespace_path, d.name, d.location, d.properties, d.materialized_at, d.created_at,
              d.clone_source_id, (SELECT vs.version FROM vs WHERE vs.location = d.location LIMIT 1),
              (SELECT u.total_bytes + u.written_bytes FROM table_usage u WHERE u.table_id = d.id),
              now() + $6::int * interval '1 second', $7, $8
         FROM d
       RETURNING ${DROPPED_COLUMNS}`,
        scope.databaseId,
        scope.catalog,
        path,
        lo,
        hi,
        v.retentionSeconds,
        v.droppedBy,
        v.requestId,
        locs,
        vers,
      ),
    );
  }

  /** A page of a database's dropped tables (one catalog, or every one when `catalog` is undefined), newest first. */
  async list(databaseId: string, catalog: string | undefined, before: [string, string] | undefined, take: number): Promise<DroppedRow[]> {
    const [at, id] = before ?? [null, null];
    return this.db.$queryRawUnsafe<DroppedRow[]>(
      `SELECT ${DROPPED_COLUMNS} FROM dropped_tables
        WHERE database_id = $1::uuid AND ($2::text IS NULL OR catalog = $2)
          AND ($3::timestamptz IS NULL OR (dropped_at, id) < ($3::timestamptz, $4::uuid))
        ORDER BY dropped_at DESC, id DESC
        LIMIT $5`,
      databaseId,
      catalog ?? null,
      at,
      id,
      take,
    );
  }

  /** One dropped table of a database (and catalog, when given), locked for its undrop or purge; null when none. */
  async lock(databaseId: string, catalog: string | undefined, id: string): Promise<DroppedRow | null> {
    const rows = await this.db.$queryRawUnsafe<DroppedRow[]>(
      `SELECT ${DROPPED_COLUMNS} FROM dropped_tables
        WHERE id = $1::uuid AND database_id = $2::uuid AND ($3::text IS NULL OR catalog = $3)
        FOR UPDATE`,
      id,
      databaseId,
      catalog ?? null,
    );
    return rows[0] ?? null;
  }

  /** Whether a dropped table keeps its data at this location. */
  async droppedAt(location: string): Promise<boolean> {
    const rows = await this.db.$queryRaw<
      { n: number }[]
    >`SELECT count(*)::int AS n FROM dropped_tables WHERE md5(location) = md5(${location}) AND location = ${location}`;
    return rows[0].n > 0;
  }

  /** Whether another dropped table is a shallow clone of this one (it reads this one's files: purged first). */
  async hasDroppedClone(id: string): Promise<boolean> {
    const rows = await this.db.$queryRaw<
      { n: number }[]
    >`SELECT count(*)::int AS n FROM dropped_tables WHERE clone_source_id = ${id}::uuid`;
    return rows[0].n > 0;
  }

  /** Whether a live table has this id (a clone's source is live). */
  async liveTable(id: string): Promise<boolean> {
    const rows = await this.db.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM tables WHERE id = ${id}::uuid`;
    return rows[0].n > 0;
  }

  /**
   * Moves a dropped table back to `tables` under `namespacePath`/`name` (same id, location and properties): the live
   * row, or 'name-taken' when a live table has that name.
   */
  async restore(row: DroppedRow, namespacePath: string, name: string): Promise<TableRow | 'name-taken'> {
    const rows = await keepingCloneSources(this.db.$queryRaw<TableRow[]>`
      INSERT INTO tables (id, database_id, catalog, namespace_path, name, location, properties, materialized_at, created_at, clone_source_id)
      VALUES (${row.id}::uuid, ${row.databaseId}::uuid, ${row.catalog}, ${namespacePath}, ${name}, ${row.location},
              ${JSON.stringify(row.properties)}::jsonb, ${row.materializedAt}, ${row.createdAt}, ${row.cloneSourceId}::uuid)
      ON CONFLICT (database_id, catalog, namespace_path, name) DO NOTHING
      RETURNING id, namespace_path AS "namespacePath", name, location, properties,
                materialized_at AS "materializedAt", created_at AS "createdAt"`);
    if (!rows[0]) return 'name-taken';
    await this.db.$executeRaw`DELETE FROM dropped_tables WHERE id = ${row.id}::uuid`;
    return rows[0];
  }

  /**
   * Removes dropped tables from the catalog and records each folder as a pending clean-up owned by `owner`, in one
   * statement: the given one (`id`), or up to `limit` whose retention has ended (FOR UPDATE SKIP LOCKED: replicas
   * sweeping at once take different rows). A table another dropped table still clones from waits for that clone.
   */
  async claimForPurge(
    owner: string,
    opts: { id: string; databaseId: string; catalog?: string } | { limit: number },
  ): Promise<PurgeClaim[]> {
    const one = 'id' in opts;
    return this.db.$queryRawUnsafe<PurgeClaim[]>(
      `WITH c AS (
         SELECT d.id FROM dropped_tables d
          WHERE ${one ? `d.id = $2::uuid AND d.database_id = $3::uuid AND ($4::text IS NULL OR d.catalog = $4)` : `d.purge_after <= now()`}
            AND NOT EXISTS (SELECT 1 FROM dropped_tables k WHERE k.clone_source_id = d.id)
          ORDER BY d.purge_after
          LIMIT ${one ? 1 : '$2::int'}
          FOR UPDATE SKIP LOCKED),
       d AS (DELETE FROM dropped_tables WHERE id IN (SELECT id FROM c) RETURNING *),
       p AS (
         INSERT INTO pending_locations (id, database_id, database_name, location, kind, request_id, owner)
         SELECT gen_random_uuid(), d.database_id, db.name, d.location, 'cleanup', d.request_id, $1
           FROM d JOIN databases db ON db.id = d.database_id
         RETURNING id, location)
       SELECT ${droppedColumns('d.')}, p.id AS "pendingId", db.name AS "databaseName"
         FROM d JOIN p ON p.location = d.location JOIN databases db ON db.id = d.database_id`,
      owner,
      ...(one ? [opts.id, opts.databaseId, opts.catalog ?? null] : [opts.limit]),
    );
  }

  /** Sets or clears a live table's protection property; its properties after, or null when there is no such table. */
  async setTableProtection(scope: Scope, namespacePath: string, name: string, on: boolean): Promise<Record<string, string> | null> {
    const rows = await this.db.$queryRaw<{ properties: Record<string, string> }[]>`
      UPDATE tables
         SET properties = CASE WHEN ${on} THEN properties || jsonb_build_object(${PROTECTED_PROPERTY}::text, 'true') ELSE properties - ${PROTECTED_PROPERTY}::text END
       WHERE database_id = ${scope.databaseId}::uuid AND catalog = ${scope.catalog}
         AND namespace_path = ${namespacePath} AND name = ${name}
      RETURNING properties`;
    return rows[0]?.properties ?? null;
  }

  /** Sets or clears a namespace's protection property; its properties after, or null when there is no such namespace. */
  async setNamespaceProtection(scope: Scope, path: string, on: boolean): Promise<Record<string, string> | null> {
    const rows = await this.db.$queryRaw<{ properties: Record<string, string> }[]>`
      UPDATE namespaces
         SET properties = CASE WHEN ${on} THEN properties || jsonb_build_object(${PROTECTED_PROPERTY}::text, 'true') ELSE properties - ${PROTECTED_PROPERTY}::text END
       WHERE database_id = ${scope.databaseId}::uuid AND catalog = ${scope.catalog} AND path = ${path}
      RETURNING properties`;
    return rows[0]?.properties ?? null;
  }
}
