import * as fs from 'node:fs';
import * as path from 'node:path';
import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config/config';
import { Errors } from '../common/errors';

const PREFIXES_FOLDER = '.prefixes';

/** One entry directly under a prefix (a folder on disk; a common prefix on an object store). */
export interface StorageEntry {
  name: string;
  isDir: boolean;
}

/** One stored file (object), its path relative to STORAGE_ROOT. */
export interface StorageFile {
  path: string;
  size: number;
  modifiedMs: number;
}

/** What lies under a prefix, recursively. `modifiedMs` is the newest file's (null when there are none). */
export interface StorageUsage {
  bytes: number;
  files: number;
  modifiedMs: number | null;
}

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

  /** Removes everything under a prefix (a table's or a database's folder); nothing there is fine. */
  async remove(location: string): Promise<void> {
    const abs = this.inside(location);
    if (abs) await fs.promises.rm(abs, { recursive: true, force: true });
  }

  // The primitives below are what crash safety (src/modules/reclaim) needs from storage: list a prefix, measure and
  // remove it, read and remove single files. They are all an object store offers too, so it can implement them.

  /** Entries directly under a prefix, by name; none when it does not exist. Symbolic links are not followed. */
  async list(prefix: string): Promise<StorageEntry[]> {
    const abs = this.inside(prefix, true);
    if (!abs) return [];
    try {
      const entries = await fs.promises.readdir(abs, { withFileTypes: true });
      return entries.map((e) => ({ name: e.name, isDir: e.isDirectory() })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return [];
      throw err;
    }
  }

  /** Every file under a prefix, recursively (a file given as the prefix is listed itself). */
  async listFiles(prefix: string): Promise<StorageFile[]> {
    const abs = this.inside(prefix, true);
    if (!abs) return [];
    const out: StorageFile[] = [];
    const visit = async (rel: string): Promise<void> => {
      let st: fs.Stats;
      try {
        st = await fs.promises.lstat(this.absolute(rel));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return; // removed meanwhile
        throw err;
      }
      if (!st.isDirectory()) {
        out.push({ path: rel, size: st.size, modifiedMs: st.mtimeMs });
        return;
      }
      for (const e of await this.list(rel)) await visit(path.join(rel, e.name));
    };
    await visit(path.relative(this.config.storageRoot, abs));
    return out;
  }

  /** Bytes, files and the newest modification under a prefix. */
  async usage(prefix: string): Promise<StorageUsage> {
    const files = await this.listFiles(prefix);
    return {
      bytes: files.reduce((n, f) => n + f.size, 0),
      files: files.length,
      modifiedMs: files.length ? Math.max(...files.map((f) => f.modifiedMs)) : null,
    };
  }

  async read(file: string): Promise<Buffer> {
    const abs = this.inside(file);
    if (!abs) throw new Error(`not a stored file: ${file}`);
    return fs.promises.readFile(abs);
  }

  async removeFile(file: string): Promise<void> {
    const abs = this.inside(file);
    if (abs) await fs.promises.rm(abs, { force: true });
  }

  /**
   * The absolute path of a location when it lies inside STORAGE_ROOT (the root itself only when `rootAllowed`);
   * null otherwise. Nothing outside the root is ever listed or deleted, whatever a catalog row says.
   */
  private inside(location: string, rootAllowed = false): string | null {
    const abs = this.absolute(location);
    if (abs.startsWith(this.config.storageRoot + path.sep)) return abs;
    return rootAllowed && abs === this.config.storageRoot ? abs : null;
  }
}
