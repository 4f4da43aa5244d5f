import { Injectable } from '@nestjs/common';
import { isUniqueViolation, sqlState } from '../../../platform/db/prisma-errors';
import { CatalogClient, UnitOfWork } from '../../../platform/db/unit-of-work';

/** One catalog-managed version of a table (of a branch; '' is main). */
export interface TableVersionRow {
  version: number;
  /** The manifest's path relative to the table's folder. */
  manifestFile: string;
  manifestSize: number | null;
  eTag: string | null;
  namingScheme: string;
  metadata: Record<string, string>;
  createdAt: Date;
}

/** A version to record: a row without its timestamp, for a table's branch. */
export type NewTableVersion = Omit<TableVersionRow, 'createdAt'> & { tableId: string; branch: string };

const COLUMNS =
  'version::float8 AS version, manifest_file AS "manifestFile", manifest_size::float8 AS "manifestSize", e_tag AS "eTag", ' +
  'naming_scheme AS "namingScheme", metadata, created_at AS "createdAt"';

/** The `table_versions` rows: the catalog's record of which versions of a managed table exist. */
@Injectable()
export class TableVersionsRepository {
  constructor(private readonly uow: UnitOfWork) {}

  private get db(): CatalogClient {
    return this.uow.db;
  }

  /**
   * Records a version. 'taken' when the table (branch) already has that version: the primary key is what decides
   * between two writers of the same version (the second waits for the first's transaction, then fails here).
   * Inside a unit of work, a 'taken' aborts it (the caller must fail the whole unit).
   */
  async insert(v: NewTableVersion): Promise<TableVersionRow | 'taken' | 'no-table'> {
    try {
      const rows = await this.db.$queryRawUnsafe<TableVersionRow[]>(
        `INSERT INTO table_versions (table_id, branch, version, manifest_file, manifest_size, e_tag, naming_scheme, metadata)
         VALUES ($1::uuid, $2, $3::bigint, $4, $5::bigint, $6, $7, $8::jsonb)
         ON CONFLICT DO NOTHING
         RETURNING ${COLUMNS}`,
        v.tableId,
        v.branch,
        v.version,
        v.manifestFile,
        v.manifestSize,
        v.eTag,
        v.namingScheme,
        JSON.stringify(v.metadata),
      );
      return rows[0] ?? 'taken';
    } catch (err) {
      if (isUniqueViolation(err)) return 'taken';
      if (sqlState(err) === '23503') return 'no-table'; // the table was dropped meanwhile
      throw err;
    }
  }

  /**
   * The table registered at `location` and whether its database manages versions in the catalog; null when no table
   * is registered there (yet).
   */
  async tableAt(location: string): Promise<{ id: string; managed: boolean } | null> {
    const rows = await this.uow.read<{ id: string; managed: boolean }>(
      `SELECT t.id, d.managed_versioning AS managed FROM tables t JOIN databases d ON d.id = t.database_id
        WHERE md5(t.location) = md5($1) AND t.location = $1`,
      [location],
      'lgw_versions_table_at',
    );
    return rows[0] ?? null;
  }

  /** The versions of a table (branch), oldest first or newest first; after `after` (exclusive) in that order. */
  async list(tableId: string, branch: string, opts: { descending: boolean; after?: number; limit?: number }): Promise<TableVersionRow[]> {
    const cmp = opts.descending ? '<' : '>';
    const params: unknown[] = [tableId, branch];
    let where = '';
    if (opts.after !== undefined) {
      params.push(opts.after);
      where = ` AND version ${cmp} $${params.length}::bigint`;
    }
    let limit = '';
    if (opts.limit !== undefined) {
      params.push(opts.limit);
      limit = ` LIMIT $${params.length}::int`;
    }
    return this.uow.read<TableVersionRow>(
      `SELECT ${COLUMNS} FROM table_versions WHERE table_id = $1::uuid AND branch = $2${where}
        ORDER BY version ${opts.descending ? 'DESC' : 'ASC'}${limit}`,
      params,
    );
  }

  /** One version, or the latest when `version` is undefined; null when there is none. */
  async find(tableId: string, branch: string, version?: number): Promise<TableVersionRow | null> {
    const rows =
      version === undefined
        ? await this.uow.read<TableVersionRow>(
            `SELECT ${COLUMNS} FROM table_versions WHERE table_id = $1::uuid AND branch = $2 ORDER BY version DESC LIMIT 1`,
            [tableId, branch],
            'lgw_versions_latest',
          )
        : await this.uow.read<TableVersionRow>(
            `SELECT ${COLUMNS} FROM table_versions WHERE table_id = $1::uuid AND branch = $2 AND version = $3::bigint`,
            [tableId, branch, version],
            'lgw_versions_one',
          );
    return rows[0] ?? null;
  }

  /** Removes the records of versions in [start, end) (end -1: up to and including the latest); the count removed. */
  async deleteRange(tableId: string, branch: string, start: number, end: number): Promise<number> {
    const rows = await this.db.$queryRawUnsafe<Array<{ n: number }>>(
      `WITH d AS (DELETE FROM table_versions
                   WHERE table_id = $1::uuid AND branch = $2 AND version >= $3::bigint AND ($4::bigint = -1 OR version < $4::bigint)
                   RETURNING 1)
       SELECT count(*)::int AS n FROM d`,
      tableId,
      branch,
      start,
      end,
    );
    return rows[0]?.n ?? 0;
  }

  /** Removes the records of every version of a branch (never of main); the count removed. */
  async deleteBranch(tableId: string, branch: string): Promise<number> {
    if (!branch) throw new Error("the version records of main are not a branch's to remove");
    const rows = await this.db.$queryRawUnsafe<Array<{ n: number }>>(
      `WITH d AS (DELETE FROM table_versions WHERE table_id = $1::uuid AND branch = $2 RETURNING 1)
       SELECT count(*)::int AS n FROM d`,
      tableId,
      branch,
    );
    return rows[0]?.n ?? 0;
  }
}
