import * as fs from 'node:fs';
import * as path from 'node:path';
import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config/config';
import { Errors } from '../common/errors';

const PREFIXES_FOLDER = '.prefixes';

/**
 * Where table data lives and what it holds. Catalog rows keep locations relative to STORAGE_ROOT
 * (`<database>/<uuid>.lance`), so the root can move and no table name ever becomes part of a path: names such as
 * `..` cannot escape, and a dropped-then-recreated name gets a new folder. What is inside a table is read by
 * LanceEngine, never here.
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
}
