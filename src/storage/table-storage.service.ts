import * as fs from 'node:fs';
import * as path from 'node:path';
import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import * as lancedb from '@lancedb/lancedb';
import { APP_CONFIG, AppConfig } from '../config/config';
import { Errors } from '../common/errors';
import { JsonSchema, jsonSchema } from './arrow-json-schema';

export interface TableStats {
  total_bytes: number;
  num_rows: number;
  num_indices: number;
  fragment_stats: {
    num_fragments: number;
    num_small_fragments: number;
    lengths: { min: number; max: number; mean: number; p25: number; p50: number; p75: number; p99: number };
  };
}

const PREFIXES_FOLDER = '.prefixes';

const EMPTY_STATS: TableStats = {
  total_bytes: 0,
  num_rows: 0,
  num_indices: 0,
  fragment_stats: {
    num_fragments: 0,
    num_small_fragments: 0,
    lengths: { min: 0, max: 0, mean: 0, p25: 0, p50: 0, p75: 0, p99: 0 },
  },
};

/**
 * Where table data lives and what it holds. Catalog rows keep locations relative to STORAGE_ROOT
 * (`<database>/<uuid>.lance`), so the root can move and no table name ever becomes part of a path: names such as
 * `..` cannot escape, and a dropped-then-recreated name gets a new folder. Reading a table goes through the
 * native Lance engine (@lancedb/lancedb).
 */
@Injectable()
export class TableStorage {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  /**
   * The folder of one catalog of a database, relative to STORAGE_ROOT: `<database>` for the default catalog,
   * `<database>/.prefixes/<a+b>` for prefix `a/b`. Each prefix is one folder next to the others (never nested in
   * another catalog's folder), and the default catalog may not register paths under `.prefixes`, so no catalog can
   * reach another's data.
   */
  databaseFolder(databaseName: string, catalog: string): string {
    return catalog === '' ? databaseName : path.join(databaseName, PREFIXES_FOLDER, catalog.split('/').join('+'));
  }

  /** A fresh relative location for a new table of the given database/catalog. */
  newLocation(databaseName: string, catalog: string): string {
    return path.join(this.databaseFolder(databaseName, catalog), `${randomUUID()}.lance`);
  }

  absolute(location: string): string {
    return path.resolve(this.config.storageRoot, location);
  }

  async prepare(location: string): Promise<void> {
    await fs.promises.mkdir(this.absolute(location), { recursive: true });
  }

  /**
   * Validates a location given to register_table: relative to the database's folder, inside it, and holding a
   * Lance table. Returns the location relative to STORAGE_ROOT.
   */
  async resolveRegistered(databaseName: string, catalog: string, location: string): Promise<string> {
    if (location.includes('://')) {
      throw Errors.invalidInput(
        `Absolute URIs are not allowed for register_table. Location must be a relative path within the database folder: ${location}`,
      );
    }
    if (path.isAbsolute(location) || location.startsWith('/') || location.startsWith('\\')) {
      throw Errors.invalidInput(
        `Absolute paths are not allowed for register_table. Location must be a relative path within the database folder: ${location}`,
      );
    }
    const segments = location.split(/[\\/]+/);
    if (segments.includes('..')) {
      throw Errors.invalidInput(
        `Path traversal is not allowed. Location must be a relative path within the database folder: ${location}`,
      );
    }
    const base = this.databaseFolder(databaseName, catalog);
    const rel = path.normalize(path.join(base, location));
    if (catalog === '' && (rel + path.sep).startsWith(path.join(base, PREFIXES_FOLDER) + path.sep)) {
      throw Errors.invalidInput(`register_table location must not point into another catalog's folder: ${location}`);
    }
    if (rel === base || !rel.startsWith(base + path.sep) || !rel.endsWith('.lance')) {
      throw Errors.invalidInput(`register_table location must name a '<name>.lance' folder inside the database folder: ${location}`);
    }
    if (!(await this.hasData(rel))) {
      throw Errors.invalidInput(`no Lance table found at location ${location}`);
    }
    return rel;
  }

  /** True when the folder holds at least one committed Lance version. */
  async hasData(location: string): Promise<boolean> {
    try {
      const entries = await fs.promises.readdir(path.join(this.absolute(location), '_versions'));
      return entries.some((e) => e.endsWith('.manifest'));
    } catch {
      return false;
    }
  }

  async remove(location: string): Promise<void> {
    const abs = this.absolute(location);
    // Never delete anything outside STORAGE_ROOT, whatever a row says.
    if (!abs.startsWith(this.config.storageRoot + path.sep)) return;
    await fs.promises.rm(abs, { recursive: true, force: true });
  }

  async removeDatabaseFolder(databaseName: string): Promise<void> {
    await this.remove(this.databaseFolder(databaseName, ''));
  }

  /** Mission §4.5 statistics, read from the table's manifest by the Lance engine. */
  async stats(location: string, branch?: string): Promise<TableStats> {
    if (!(await this.hasData(location))) return EMPTY_STATS;
    const table = await this.open(location, branch);
    try {
      const s = await table.stats();
      const l = s.fragmentStats.lengths;
      return {
        total_bytes: s.totalBytes,
        num_rows: s.numRows,
        num_indices: s.numIndices,
        fragment_stats: {
          num_fragments: s.fragmentStats.numFragments,
          num_small_fragments: s.fragmentStats.numSmallFragments,
          lengths: { min: l.min, max: l.max, mean: l.mean, p25: l.p25, p50: l.p50, p75: l.p75, p99: l.p99 },
        },
      };
    } finally {
      table.close();
    }
  }

  /** The current version of the table (null while it has no data). */
  async version(location: string, branch?: string): Promise<number | null> {
    if (!(await this.hasData(location))) return null;
    const table = await this.open(location, branch);
    try {
      return await table.version();
    } finally {
      table.close();
    }
  }

  /**
   * The version and schema (Lance JSON schema) of a table, at `version` when given (null while it has no data).
   * A version the table does not have is a 404 (code 11).
   */
  async describeData(location: string, version?: number, branch?: string): Promise<{ version: number; schema: JsonSchema } | null> {
    if (!(await this.hasData(location))) return null;
    const table = await this.open(location, branch);
    try {
      if (version !== undefined) {
        try {
          await table.checkout(version);
        } catch {
          throw Errors.tableVersionNotFound(`version ${version} not found`);
        }
      }
      return { version: await table.version(), schema: jsonSchema(await table.schema()) };
    } finally {
      table.close();
    }
  }

  private async open(location: string, branch?: string): Promise<lancedb.Table> {
    const abs = this.absolute(location);
    const conn = await lancedb.connect(path.dirname(abs));
    try {
      return await conn.openTable(path.basename(abs, '.lance'), undefined, branch ? { branch } : {});
    } catch (err) {
      const msg = err instanceof Error ? err.message : String(err);
      // The engine's messages carry server paths: say only what the caller needs.
      if (branch && /Ref is invalid/i.test(msg)) {
        throw Errors.invalidInput(`invalid branch name '${branch}': ${/Ref is invalid: ([^\n]*?)(\s+Caused by|$)/.exec(msg)?.[1] ?? ''}`);
      }
      if (branch && /not found|does not exist|no such/i.test(msg)) throw Errors.branchNotFound(`branch '${branch}' not found`);
      throw err;
    } finally {
      conn.close();
    }
  }
}
