import * as fs from 'node:fs';
import * as path from 'node:path';
import { Injectable } from '@nestjs/common';
import * as lancedb from '@lancedb/lancedb';
import { Errors } from '../common/errors';
import { EngineErrorContext, translateEngineError } from './engine-errors';
import { JsonSchema, jsonSchema, SchemaDialect } from './arrow-json-schema';
import { TableStorage } from './table-storage.service';

/** Which state of a table to open: a version and/or a branch (latest of main when absent). */
export interface TableRef {
  version?: number;
  branch?: string;
}

/**
 * The branch a request names, or undefined for main: `""` and `"main"` (surrounding blanks ignored) mean main, as
 * the spec and the official clients have it.
 */
export function branchOf(branch: string | null | undefined): string | undefined {
  const b = branch?.trim();
  return b && b !== 'main' ? b : undefined;
}

/** One committed version of a table (the spec's TableVersion, plus the RFC 3339 `timestamp` the remote client reads). */
export interface TableVersionInfo {
  version: number;
  /** The manifest's path on the table's object store (the absolute path without its leading `/`), as the reference answers. */
  manifest_path: string;
  manifest_size?: number;
  timestamp_millis: number;
  timestamp: string;
  metadata: Record<string, string>;
}

const U64_MAX = (1n << 64n) - 1n;

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

/** The native handles of a local connection (`LocalConnection.inner`, public but not re-exported by the package). */
interface NativeMergeBuilder {
  whenMatchedUpdateAll(condition?: string): NativeMergeBuilder;
  whenNotMatchedInsertAll(): NativeMergeBuilder;
  whenNotMatchedBySourceDelete(filter?: string): NativeMergeBuilder;
  useIndex(useIndex: boolean): NativeMergeBuilder;
  setTimeout(ms: number): void;
  execute(buf: Buffer): Promise<{ version: number; numInsertedRows: number; numUpdatedRows: number; numDeletedRows: number; numAttempts?: number }>;
}
export interface NativeTable {
  close(): void;
  version(): Promise<number>;
  add(buf: Buffer, mode: string): Promise<{ version: number }>;
  update(onlyIf: string | undefined, columns: Array<[string, string]>): Promise<{ rowsUpdated: number; version: number }>;
  delete(predicate: string): Promise<{ numDeletedRows: number; version: number }>;
  mergeInsert(on: string[]): NativeMergeBuilder;
}
interface NativeConnection {
  openTable(name: string, namespacePath: string[], storageOptions: undefined): Promise<NativeTable>;
  createTable(name: string, buf: Buffer, mode: string, namespacePath: string[], storageOptions: undefined): Promise<NativeTable>;
}
const nativeOf = (c: lancedb.Connection): NativeConnection => {
  const inner = (c as unknown as { inner?: NativeConnection }).inner;
  if (!inner || typeof inner.createTable !== 'function') throw new Error('@lancedb/lancedb: no native connection handle');
  return inner;
};

/**
 * The native Lance engine (@lancedb/lancedb) at a table's catalog location: `connect(dirname)` +
 * `openTable(basename without .lance)`. This is the only place that opens Lance tables; where they live (paths,
 * folders) is TableStorage's business. Writes of Arrow bodies go through the engine's native entry points with the
 * body's IPC messages unchanged (see arrow-ipc.ts), so compressed buffers are decoded natively.
 */
@Injectable()
export class LanceEngine {
  constructor(private readonly storage: TableStorage) {}

  private split(location: string): { dir: string; name: string } {
    const abs = this.storage.absolute(location);
    return { dir: path.dirname(abs), name: path.basename(abs, '.lance') };
  }

  /** Runs `fn` with a table handle (the wrapper API), closing it afterwards. */
  async withTable<T>(location: string, fn: (t: lancedb.Table) => Promise<T>, at?: number | TableRef): Promise<T> {
    const handle = await this.open(location, at);
    try {
      return await fn(handle.table);
    } catch (err) {
      throw this.translate(err);
    } finally {
      handle.close();
    }
  }

  /**
   * A table handle that outlives the call (a streamed answer); the caller must call `close`. `at` picks a version
   * (a number, as the remote client's checkout) and/or a branch; latest of main by default.
   */
  async open(location: string, at?: number | TableRef): Promise<{ table: lancedb.Table; close: () => void }> {
    const ref: TableRef = typeof at === 'number' ? { version: at } : (at ?? {});
    const { dir, name } = this.split(location);
    const conn = await lancedb.connect(dir);
    let table: lancedb.Table | undefined;
    try {
      table = await this.openIn(conn, name, branchOf(ref.branch));
      if (ref.version !== undefined && ref.version !== null) {
        try {
          await table.checkout(ref.version);
        } catch {
          throw Errors.tableVersionNotFound(`version ${ref.version} not found`);
        }
      }
    } catch (err) {
      table?.close();
      conn.close();
      throw this.translate(err);
    }
    let closed = false;
    const t = table;
    return {
      table: t,
      close: () => {
        if (closed) return;
        closed = true;
        t.close();
        conn.close();
      },
    };
  }

  private async openIn(conn: lancedb.Connection, name: string, branch: string | undefined): Promise<lancedb.Table> {
    try {
      return await conn.openTable(name, undefined, branch ? ({ branch } as never) : {});
    } catch (err) {
      throw this.translate(err, { branch });
    }
  }

  /** docs/rest-contract.md §4.5 statistics, read from the table's manifest (empty while the table has no data). */
  async stats(location: string, branch?: string): Promise<TableStats> {
    if (!(await this.storage.hasData(location))) return EMPTY_STATS;
    return this.withTable(
      location,
      async (table) => {
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
      },
      { branch },
    );
  }

  /**
   * The version and schema (Lance JSON schema) of a table, at `version` when given (null while it has no data).
   * A version the table does not have is a 404 (code 11).
   */
  async describe(
    location: string,
    dialect: SchemaDialect,
    version?: number,
    branch?: string,
  ): Promise<{ version: number; schema: JsonSchema } | null> {
    if (!(await this.storage.hasData(location))) return null;
    return this.withTable(
      location,
      async (table) => ({ version: await table.version(), schema: jsonSchema(await table.schema(), dialect) }),
      { version, branch },
    );
  }

  /**
   * Every version of a table (of `branch`, main by default), oldest first, with the manifest each one is committed
   * in. A branch lists the versions of main it was forked from too, as the engine reports them.
   */
  async versions(location: string, branch?: string): Promise<TableVersionInfo[]> {
    const listed = await this.withTable(location, (t) => t.listVersions(), { branch });
    const manifests = await this.manifests(location, branchOf(branch));
    return listed
      .map((v) => {
        const m = manifests.get(v.version);
        return {
          version: v.version,
          manifest_path: m?.path ?? this.objectPath(path.join(this.versionsDir(location, branchOf(branch)), `${U64_MAX - BigInt(v.version)}.manifest`)),
          ...(m ? { manifest_size: m.size } : {}),
          timestamp_millis: v.timestamp.getTime(),
          timestamp: v.timestamp.toISOString(),
          metadata: v.metadata ?? {},
        };
      })
      .sort((a, b) => a.version - b.version);
  }

  /** The folder of a table's (or one of its branches') manifests: `<table>/_versions`, `<table>/tree/<branch>/_versions`. */
  private versionsDir(location: string, branch: string | undefined): string {
    const root = this.storage.absolute(location);
    return branch ? path.join(root, 'tree', branch, '_versions') : path.join(root, '_versions');
  }

  /** Path on the local object store: the absolute path without its leading separator (object_store's `Path`). */
  private objectPath(abs: string): string {
    return abs.split(path.sep).filter(Boolean).join('/');
  }

  /**
   * The manifest files of a table by version. Lance names them `<version>.manifest` (V1) or
   * `<u64::MAX - version>.manifest` (V2, so that listing finds the newest first); detached versions (`d…`) are not
   * versions of the table. Nothing outside the table's folder is read, whatever the branch name says.
   */
  private async manifests(location: string, branch: string | undefined): Promise<Map<number, { path: string; size: number }>> {
    const root = this.storage.absolute(location);
    const dir = this.versionsDir(location, branch);
    const out = new Map<number, { path: string; size: number }>();
    if (!dir.startsWith(root + path.sep)) return out;
    let names: string[];
    try {
      names = await fs.promises.readdir(dir);
    } catch {
      return out;
    }
    await Promise.all(
      names.map(async (file) => {
        const m = /^(\d+)\.manifest$/.exec(file);
        if (!m) return;
        const n = BigInt(m[1]);
        const version = Number(n > U64_MAX / 2n ? U64_MAX - n : n);
        const abs = path.join(dir, file);
        const st = await fs.promises.stat(abs).catch(() => null);
        if (st?.isFile()) out.set(version, { path: this.objectPath(abs), size: st.size });
      }),
    );
    return out;
  }

  /**
   * Runs `fn` with the native table handle (raw IPC writes), of `branch` when one is named (main otherwise). A branch
   * the table does not have is a 404 (code 22), never main's data.
   */
  async withNative<T>(location: string, fn: (t: NativeTable) => Promise<T>, branch?: string): Promise<T> {
    if (branchOf(branch)) {
      const h = await this.open(location, { branch });
      try {
        const inner = (h.table as unknown as { inner?: NativeTable }).inner;
        if (!inner || typeof inner.add !== 'function') throw new Error('@lancedb/lancedb: no native table handle');
        return await fn(inner);
      } catch (err) {
        throw this.translate(err);
      } finally {
        h.close();
      }
    }
    const { dir, name } = this.split(location);
    const conn = await lancedb.connect(dir);
    let table: NativeTable | undefined;
    try {
      table = await nativeOf(conn).openTable(name, [], undefined);
      return await fn(table);
    } catch (err) {
      throw this.translate(err);
    } finally {
      table?.close();
      conn.close();
    }
  }

  /** Writes an IPC file as the table's first version (`create`) or as a new version replacing all rows (`overwrite`). */
  async create(location: string, ipcFile: Buffer, mode: 'create' | 'overwrite'): Promise<number> {
    const { dir, name } = this.split(location);
    const conn = await lancedb.connect(dir);
    try {
      const t = await nativeOf(conn).createTable(name, ipcFile, mode, [], undefined);
      try {
        return await t.version();
      } finally {
        t.close();
      }
    } catch (err) {
      throw this.translate(err);
    } finally {
      conn.close();
    }
  }

  async append(location: string, ipcFile: Buffer, mode: 'append' | 'overwrite' = 'append', branch?: string): Promise<number> {
    return this.withNative(location, async (t) => (await t.add(ipcFile, mode)).version, branch);
  }

  /**
   * Engine errors as the errors to answer with, through the one table (engine-errors.ts); server paths are cut from
   * messages. `context` names what the caller asked for (a branch), for messages that cannot.
   */
  translate(err: unknown, context: EngineErrorContext = {}): unknown {
    return translateEngineError(err, this.storage.absolute('.'), context);
  }
}
