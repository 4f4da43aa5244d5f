import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { isUniqueViolation } from '../../../platform/db/prisma-errors';
import { Scope } from '../../identity';
import { CatalogClient, UnitOfWork } from '../../../platform/db/unit-of-work';
import type { PendingValues } from '../../../platform/cluster/pending-locations.repository';
import { keepingCloneSources } from './clone-source';
import { answerParams, answerSql, Carried, CarriedOutcome, claimParams, claimSql } from '../../idempotency';

export interface TableRow {
  id: string;
  namespacePath: string;
  name: string;
  location: string;
  properties: Record<string, string>;
  materializedAt: Date | null;
  createdAt: Date;
}

/** What telling a declared-only table apart needs: whether the catalog knows of data, and where to look if not. */
export type TableListRow = Pick<TableRow, 'id' | 'namespacePath' | 'name' | 'location' | 'materializedAt'>;

/**
 * One row of a listing: the key, whether the catalog knows the table to have data, and, only for one it does not
 * (which must be looked at on storage), its id and location. Nothing a page does not use is read or parsed.
 */
export interface ListedTable {
  namespacePath: string;
  name: string;
  /**
   * Null when the catalog knows the table has data; else its id and location, to look for data and remember it.
   * Absent from a page read with declared tables included (`onlyWithData` false), which needs only the names.
   */
  declared?: { id: string; location: string } | null;
}

/** A TableRow's columns, for the reads written in SQL. */
const ROW_COLUMNS =
  'id, namespace_path AS "namespacePath", name, location, properties, materialized_at AS "materializedAt", created_at AS "createdAt"';
/**
 * A page of names reads only the unique index's own columns (an index-only scan once the table is vacuumed), as the
 * default listing, declared tables included, needs. Leaving declared-only tables out needs to know which tables the
 * catalog knows to have data: a declared table's id and location come as one JSON value, null for the others.
 */
const NAME_COLUMNS = 'namespace_path AS "namespacePath", name';
const LIST_COLUMNS = `${NAME_COLUMNS}, CASE WHEN materialized_at IS NULL THEN json_build_object('id', id, 'location', location) END AS declared`;

/** What a new table row is made of. */
interface NewTable {
  namespacePath: string;
  name: string;
  location: string;
  properties: Record<string, string>;
  materialized: boolean;
  cloneSourceId?: string;
}

@Injectable()
export class TablesRepository {
  constructor(private readonly uow: UnitOfWork) {}

  private get db(): CatalogClient {
    return this.uow.db;
  }

  /** The table by name. A hot read (every describe, exists, data-plane call): straight on the driver outside a unit. */
  async find(scope: Scope, namespacePath: string, name: string): Promise<TableRow | null> {
    const rows = await this.uow.read<TableRow>(
      `SELECT ${ROW_COLUMNS} FROM tables
        WHERE database_id = $1::uuid AND catalog = $2 AND namespace_path = $3 AND name = $4`,
      [scope.databaseId, scope.catalog, namespacePath, name],
      'lgw_tables_find',
    );
    return rows[0] ?? null;
  }

  /** The table registered at a storage location in the caller's catalog (a location is one table's at most). */
  async findByLocation(scope: Scope, location: string): Promise<TableRow | null> {
    const rows = await this.uow.read<TableRow>(
      `SELECT ${ROW_COLUMNS} FROM tables WHERE database_id = $1::uuid AND catalog = $2 AND location = $3`,
      [scope.databaseId, scope.catalog, location],
      'lgw_tables_at_location',
    );
    return rows[0] ?? null;
  }

  /**
   * Inserts a table row. 'name-taken' when the name exists (concurrent creators: exactly one wins);
   * 'location-taken' when another entry already uses the storage folder (then the transaction is aborted).
   */
  async insert(scope: Scope, t: NewTable): Promise<TableRow | 'name-taken' | 'location-taken'> {
    try {
      const rows = await this.insertRow(scope, t);
      return rows[0] ?? 'name-taken';
    } catch (err) {
      if (isUniqueViolation(err)) return 'location-taken';
      throw err;
    }
  }

  private insertRow(scope: Scope, t: NewTable): Promise<TableRow[]> {
    return keepingCloneSources(this.db.$queryRaw<TableRow[]>`
      INSERT INTO tables (id, database_id, catalog, namespace_path, name, location, properties, materialized_at, clone_source_id)
      VALUES (${randomUUID()}::uuid, ${scope.databaseId}::uuid, ${scope.catalog}, ${t.namespacePath}, ${t.name},
              ${t.location}, ${JSON.stringify(t.properties)}::jsonb,
              CASE WHEN ${t.materialized} THEN now() ELSE NULL END, ${t.cloneSourceId ?? null}::uuid)
      ON CONFLICT (database_id, catalog, namespace_path, name) DO NOTHING
      RETURNING id, namespace_path AS "namespacePath", name, location, properties,
                materialized_at AS "materializedAt", created_at AS "createdAt"`);
  }

  async deleteById(id: string): Promise<TableRow | null> {
    const rows = await keepingCloneSources(this.db.$queryRaw<TableRow[]>`
      DELETE FROM tables WHERE id = ${id}::uuid
      RETURNING id, namespace_path AS "namespacePath", name, location, properties,
                materialized_at AS "materializedAt", created_at AS "createdAt"`);
    return rows[0] ?? null;
  }

  /** Deletes by name; returns the removed row, or null when there was none. */
  async delete(scope: Scope, namespacePath: string, name: string): Promise<TableRow | null> {
    const rows = await keepingCloneSources(this.db.$queryRaw<TableRow[]>`
      DELETE FROM tables
       WHERE database_id = ${scope.databaseId}::uuid AND catalog = ${scope.catalog}
         AND namespace_path = ${namespacePath} AND name = ${name}
      RETURNING id, namespace_path AS "namespacePath", name, location, properties,
                materialized_at AS "materializedAt", created_at AS "createdAt"`);
    return rows[0] ?? null;
  }

  // Crash safety: the statements below record a pending location (see PendingLocationsRepository) in the round trip
  // that already runs before the storage work, so recording it costs no extra trip to the catalog.

  /**
   * The table row by name, or, when the name is free, a pending 'write' record of `v.location` (the fresh folder a
   * new table will be written to), in one statement. `reserved` says whether the record was stored.
   */
  async findReservingFresh(
    scope: Scope,
    namespacePath: string,
    name: string,
    v: PendingValues,
  ): Promise<{ row: TableRow | null; reserved: boolean }> {
    const rows = await this.db.$queryRaw<Array<TableRow & { pendingId: string | null }>>`
      WITH r AS (
        SELECT id, namespace_path, name, location, properties, materialized_at, created_at FROM tables
         WHERE database_id = ${scope.databaseId}::uuid AND catalog = ${scope.catalog}
           AND namespace_path = ${namespacePath} AND name = ${name}),
      p AS (
        INSERT INTO pending_locations (id, database_id, database_name, location, kind, request_id, owner)
        SELECT ${v.id}::uuid, ${v.databaseId}::uuid, ${v.databaseName}, ${v.location}, 'write', ${v.requestId}, ${v.owner}
         WHERE NOT EXISTS (SELECT 1 FROM r)
        RETURNING id)
      SELECT r.id, r.namespace_path AS "namespacePath", r.name, r.location, r.properties,
             r.materialized_at AS "materializedAt", r.created_at AS "createdAt", p.id AS "pendingId"
        FROM (SELECT 1) AS one LEFT JOIN r ON true LEFT JOIN p ON true`;
    const { pendingId, ...row } = rows[0];
    return { row: row.id ? (row as TableRow) : null, reserved: pendingId !== null };
  }

  /**
   * The table row by name and, when it exists, a pending 'write' record of its own folder (an in-place write
   * begins), in one statement. `v.location` is ignored: the record takes the row's. With `carried`, the same
   * statement also claims a keyed write's key (src/modules/idempotency/carried-claim.ts), whether or not the table
   * exists, and stores the answer it carries: `carried` in the result says what it did. Straight on the driver,
   * prepared, as the hot reads are (it is the first statement of every insert).
   */
  async findReservingInPlace(
    scope: Scope,
    namespacePath: string,
    name: string,
    v: PendingValues,
    carried?: Carried,
  ): Promise<{ row: TableRow | null; carried?: CarriedOutcome }> {
    const claim = carried?.claim;
    const answer = carried?.answer;
    const rows = await this.uow.read<TableRow & { pendingId: string | null; claimed?: string | null; stored?: string | null }>(
      `WITH r AS (
        SELECT id, namespace_path, name, location, properties, materialized_at, created_at FROM tables
         WHERE database_id = $1::uuid AND catalog = $2 AND namespace_path = $3 AND name = $4),
      p AS (
        INSERT INTO pending_locations (id, database_id, database_name, location, kind, request_id, owner)
        SELECT $5::uuid, $6::uuid, $7, r.location, 'write', $8, $9 FROM r
        RETURNING id)${
          claim
            ? `,
      c AS (${claimSql(10)})`
            : ''
        }${
          answer
            ? `,
      a AS (${answerSql(19, 10)})`
            : ''
        }
      SELECT r.id, r.namespace_path AS "namespacePath", r.name, r.location, r.properties,
             r.materialized_at AS "materializedAt", r.created_at AS "createdAt", p.id AS "pendingId"${claim ? ', c.id AS claimed' : ''}${
               answer ? `, (SELECT a.id::text FROM a) AS stored` : ''
             }
        FROM (SELECT 1) AS one LEFT JOIN r ON true LEFT JOIN p ON true${claim ? ' LEFT JOIN c ON true' : ''}`,
      [
        ...[scope.databaseId, scope.catalog, namespacePath, name, v.id, v.databaseId, v.databaseName, v.requestId, v.owner],
        ...(claim ? claimParams(claim) : []),
        ...(answer ? answerParams(answer) : []),
      ],
      claim
        ? answer
          ? 'lgw_tables_reserve_in_place_claiming_storing'
          : 'lgw_tables_reserve_in_place_claiming'
        : 'lgw_tables_reserve_in_place',
    );
    const { pendingId: _, claimed, stored, ...row } = rows[0];
    return {
      row: row.id ? (row as TableRow) : null,
      ...(claim ? { carried: { claimed: claimed ?? null, stored: !!stored } } : {}),
    };
  }

  /**
   * Deletes a table by name and records its folder as a pending 'cleanup' in the same statement, so a crash before
   * the folder is gone leaves a record the reclaimer finishes. `v.location` is ignored: the record takes the row's.
   */
  async deleteRecordingCleanup(scope: Scope, namespacePath: string, name: string, v: PendingValues): Promise<TableRow | null> {
    const rows = await keepingCloneSources(this.db.$queryRaw<TableRow[]>`
      WITH d AS (
        DELETE FROM tables
         WHERE database_id = ${scope.databaseId}::uuid AND catalog = ${scope.catalog}
           AND namespace_path = ${namespacePath} AND name = ${name}
        RETURNING id, namespace_path, name, location, properties, materialized_at, created_at),
      p AS (
        INSERT INTO pending_locations (id, database_id, database_name, location, kind, request_id, owner)
        SELECT ${v.id}::uuid, ${v.databaseId}::uuid, ${v.databaseName}, d.location, 'cleanup', ${v.requestId}, ${v.owner} FROM d
        RETURNING id)
      SELECT d.id, d.namespace_path AS "namespacePath", d.name, d.location, d.properties,
             d.materialized_at AS "materializedAt", d.created_at AS "createdAt"
        FROM d LEFT JOIN p ON true`);
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

  /**
   * A page of a namespace's tables; `onlyWithData`: read what leaving declared-only tables out needs (`declared`).
   * `only`: the names a scoped credential may see (docs/access-control.md), filtered before the page is cut.
   */
  async listInNamespace(
    scope: Scope,
    namespacePath: string,
    after: string | undefined,
    take: number,
    onlyWithData: boolean,
    only?: readonly string[],
    prefix?: string,
  ): Promise<ListedTable[]> {
    // Names are never empty, so '' precedes every one.
    const params: unknown[] = [scope.databaseId, scope.catalog, namespacePath, after ?? '', take];
    let where = '';
    if (only) {
      params.push(only);
      where += ` AND name = ANY($${params.length}::text[])`;
    }
    if (prefix) {
      // Names use only [A-Za-z0-9_.-] and sort in byte order (COLLATE "C"): those starting with `prefix` are one range.
      params.push(prefix, `${prefix}\x7f`);
      where += ` AND name >= $${params.length - 1} AND name < $${params.length}`;
    }
    return this.uow.read<ListedTable>(
      `SELECT ${onlyWithData ? LIST_COLUMNS : NAME_COLUMNS} FROM tables
        WHERE database_id = $1::uuid AND catalog = $2 AND namespace_path = $3 AND name > $4${where}
        ORDER BY name
        LIMIT $5`,
      params,
      `${onlyWithData ? 'lgw_tables_in_namespace_v2' : 'lgw_table_names_in_namespace'}${only ? '_only' : ''}${prefix ? '_prefix' : ''}`,
    );
  }

  /**
   * Every table of the scope in (namespace_path, name) order, keyset-paginated on the unique index: constant cost
   * per page. The first page starts after ('', ''), which precedes every row (names are never empty). `onlyWithData` as
   * in listInNamespace. `only`: what a scoped credential may see (docs/access-control.md), as namespace paths (their
   * tables at any depth) and single tables: see keyRanges.
   */
  async listAll(
    scope: Scope,
    after: [string, string] | undefined,
    take: number,
    onlyWithData: boolean,
    only?: { namespaces: readonly string[]; tables: readonly { namespacePath: string; name: string }[] },
  ): Promise<ListedTable[]> {
    const [afterPath, afterName] = after ?? ['', ''];
    const columns = onlyWithData ? LIST_COLUMNS : NAME_COLUMNS;
    if (!only) {
      return this.uow.read<ListedTable>(
        `SELECT ${columns} FROM tables
          WHERE database_id = $1::uuid AND catalog = $2 AND (namespace_path, name) > ($3, $4)
          ORDER BY namespace_path, name
          LIMIT $5`,
        [scope.databaseId, scope.catalog, afterPath, afterName, take],
        onlyWithData ? 'lgw_tables_all_v2' : 'lgw_table_names_all',
      );
    }
    // One index range scan per granted range, merged in key order (Merge Append) and cut at the page size: Postgres
    // reads each range lazily, so a page costs one index descent per range plus its rows, however large the ranges
    // (docs/performance.md). Prepared per number of ranges (at most MAX_GRANTS).
    const ranges = keyRanges(only, [afterPath, `${afterName}${NEXT}`]);
    if (ranges.length === 0) return [];
    const params: unknown[] = [scope.databaseId, scope.catalog, take];
    const arms = ranges.map(([from, to]) => {
      const [a, b, c, d] = [from[0], from[1], to[0], to[1]].map((v) => `$${params.push(v)}`);
      return `(SELECT ${columns} FROM tables
                WHERE database_id = $1::uuid AND catalog = $2 AND (namespace_path, name) >= (${a}, ${b}) AND (namespace_path, name) < (${c}, ${d})
                ORDER BY namespace_path, name
                LIMIT $3)`;
    });
    const rows = await this.uow.read<ListedTable>(
      `SELECT * FROM (${arms.join(' UNION ALL ')}) u ORDER BY "namespacePath", name LIMIT $3`,
      params,
      `${onlyWithData ? 'lgw_tables_in_ranges' : 'lgw_table_names_in_ranges'}_${ranges.length}`,
    );
    return rows;
  }

  async markMaterialized(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.db.catalogTable.updateMany({
      where: { id: { in: ids }, materializedAt: null },
      data: { materializedAt: new Date() },
    });
  }
}

type Key = [path: string, name: string];

/**
 * The smallest character after any that names use (letters, digits, '_', '-', '.', all above U+0020): `name + NEXT`
 * is the first key after `name` that any other name could have. (Not U+0000, which Postgres text cannot hold.)
 */
const NEXT = '\u0001';

const before = (a: Key, b: Key) => a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);

/**
 * The (namespace_path, name) ranges [from, to) a scoped credential's tables lie in, sorted, overlaps merged, and cut
 * to begin at `start`. A namespace reaches its own tables and those of every namespace below it: the paths from `ns`
 * up to `ns + ' '` (its children's paths continue with U+001F; any other path beginning with `ns` continues with a
 * name character, above ' '). A table is the point [(path, name), (path, name + NEXT)). Paths and names are ASCII and
 * the columns COLLATE "C", so JavaScript's string order is the index's.
 */
export function keyRanges(
  only: { namespaces: readonly string[]; tables: readonly { namespacePath: string; name: string }[] },
  start: Key,
): [Key, Key][] {
  const ranges: [Key, Key][] = [
    ...only.namespaces.map((ns): [Key, Key] => [
      [ns, ''],
      [`${ns} `, ''],
    ]),
    ...only.tables.map((t): [Key, Key] => [
      [t.namespacePath, t.name],
      [t.namespacePath, `${t.name}${NEXT}`],
    ]),
  ].sort((a, b) => (before(a[0], b[0]) ? -1 : before(b[0], a[0]) ? 1 : 0));
  const merged: [Key, Key][] = [];
  for (const [from, to] of ranges) {
    const last = merged[merged.length - 1];
    if (last && !before(last[1], from)) {
      if (before(last[1], to)) last[1] = to;
    } else merged.push([from, to]);
  }
  return merged.filter(([, to]) => before(start, to)).map(([from, to]): [Key, Key] => [before(from, start) ? start : from, to]);
}
