// Over 400 lines on purpose: one class because the handle cache, the write and storage listeners and the footprint
// cache are state every entry point shares; its pure parts live beside it (lance-native.ts, store-footprint.ts,
// table-manifests.ts, engine-errors.ts).
import { Inject, Injectable, Logger, OnModuleDestroy, Optional } from '@nestjs/common';
import * as lancedb from '@lancedb/lancedb';
import { LRUCache } from 'lru-cache';
import { Counter, Gauge } from 'prom-client';
import { APP_CONFIG, AppConfig } from '../../platform/config/config';
import { MetricsService } from '../../platform/observability/metrics.service';
import { hintCache } from '../../platform/runtime/hint-cache';
import { ApiError, Errors } from '../../platform/http/errors';
import { EngineErrorContext, translateEngineError } from './engine-errors';
import { JsonSchema, jsonSchema, SchemaDialect } from '../arrow/arrow-json-schema';
import { TableStorage } from '../storage/table-storage.service';
import { NativeTable, nativeOf } from './lance-native';
import { handleBytes, SessionStats, SharedSession } from './lance-session';
import { commitOverhead, dataBytes, Footprint, footprintWithIndices, growth, written0 } from './store-footprint';
import { manifestsOf, U64_MAX, versionsDir } from './table-manifests';

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

/** How LanceEngine.withNative counts what a commit adds to the store. */
export interface NativeWrite {
  /** `fn` replaces every row (all the data files of its version are new). */
  overwrites?: boolean;
  /**
   * `fn` commits this many bytes of Arrow IPC body as new rows (an append, a merge_insert): counted as the bytes it
   * adds (Lance's data files measured 0.8 to 1.2 times the IPC bytes), without reading the version's statistics.
   */
  bodyBytes?: number;
}

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

function closeHandle(h: CachedHandle): void {
  try {
    h.table.close();
  } catch {
    /* already closed */
  }
  try {
    h.conn.close();
  } catch {
    /* already closed */
  }
}
/** LanceEngine.streamWriter: one table written chunk by chunk through one handle. */
export interface StreamWriter {
  /** Commits `ipcFile` (an Arrow IPC file): the table's first version on the first call, an appended one after. */
  write(ipcFile: Buffer): Promise<number>;
  /** Closes the handle; the write listeners are told when a version was committed. Idempotent. */
  close(): Promise<void>;
}

/**
 * The native Lance engine (@lancedb/lancedb) at a table's catalog location: `connect(dirname)` +
 * `openTable(basename without .lance)`. This is the only place that opens Lance tables; where they live (paths,
 * folders) is TableStorage's business. Writes of Arrow bodies go through the engine's native entry points with the
 * body's IPC messages unchanged (see arrow-ipc.ts), so compressed buffers are decoded natively.
 */
/** One open table kept for reads: shared by concurrent requests, closed when evicted and no longer leased. */
interface CachedHandle {
  table: lancedb.Table;
  conn: lancedb.Connection;
  leases: number;
  evicted: boolean;
  /** Its estimated memory (lance-session.ts handleBytes), as last known. */
  bytes: number;
}

/**
 * A kept handle as the cache holds it, with the estimated memory the cache's byte bound counts for it. A handle is
 * sized again by putting a new entry of it in its place (the cache re-counts a value only when it is replaced),
 * which does not close it.
 */
interface Kept {
  h: CachedHandle;
  bytes: number;
}

/** How often expired handles are closed (and an idle session let go): a quarter of the idle time, 250 ms to 30 s. */
const sweepEvery = (idleMs: number) => Math.min(Math.max(Math.floor(idleMs / 4), 250), 30_000);

@Injectable()
export class LanceEngine implements OnModuleDestroy {
  /**
   * Open tables for reads, by location, branch and pinned version (LRU within TABLE_HANDLE_CACHE_BYTES of estimated
   * memory; idle ones are closed by a sweep). A handle of the latest version is opened with
   * `readConsistencyInterval: 0`, so every read sees the latest committed version (also one another replica or a
   * namespace-mode client committed) without reopening; a pinned version stays pinned.
   */
  private readonly handles?: LRUCache<string, Kept>;
  /** The one Lance session (bounded index and metadata caches) every connection opens with, reads and writes. */
  private readonly session: SharedSession;
  private readonly idleMs: number;
  private readonly sweeper: NodeJS.Timeout;
  /** Handles opened for the cache (its misses), for the metrics. */
  private handleOpens = 0;
  private readonly opening = new Map<string, Promise<CachedHandle>>();
  private readonly writeListeners: Array<(location: string, branch?: string) => Promise<unknown>> = [];
  private readonly storedListeners: Array<(location: string, bytes: number) => void> = [];
  /**
   * The last footprint this replica saw committed, by table location and branch: a write that finds the table still
   * at that version needs no statistics read before its commit (one read costs about 0.5 ms at 300 fragments, 1 ms
   * at 600), and an append or a merge_insert none after it either.
   */
  private readonly footprints: LRUCache<string, Footprint>;
  private readonly log = new Logger('LanceEngine');

  constructor(
    private readonly storage: TableStorage,
    @Inject(APP_CONFIG) config: AppConfig,
    @Optional() metrics?: MetricsService,
  ) {
    this.footprints = hintCache<Footprint>(config.tableHintCacheBytes, () => 64);
    const { maxBytes, max, idleMs } = config.tableHandles;
    this.idleMs = idleMs;
    this.session = new SharedSession(config.lanceSession.indexCacheBytes, config.lanceSession.metadataCacheBytes);
    if (max !== undefined) this.log.warn('TABLE_HANDLE_CACHE_SIZE is deprecated: the kept handles are bounded by TABLE_HANDLE_CACHE_BYTES');
    if (maxBytes > 0 && max !== 0) {
      this.handles = new LRUCache<string, Kept>({
        ...(max !== undefined ? { max } : {}),
        maxSize: maxBytes,
        sizeCalculation: (k) => k.bytes,
        ttl: idleMs,
        updateAgeOnGet: true,
        // Replacing an entry only re-sizes its handle; evicted, expired or deleted, it is closed once no read uses it.
        noDisposeOnSet: true,
        dispose: ({ h }) => {
          h.evicted = true;
          if (h.leases === 0) closeHandle(h);
        },
      });
      // Whatever removes a table's or a database's storage closes the handles under it.
      storage.onRemove((prefix) => this.forget(prefix));
    }
    this.sweeper = setInterval(() => this.sweep(), sweepEvery(idleMs)).unref();
    if (metrics) this.registerMetrics(metrics);
  }

  onModuleDestroy(): void {
    clearInterval(this.sweeper);
    this.handles?.clear();
  }

  /**
   * Closes the handles unused for TABLE_HANDLE_IDLE_SECONDS (the cache only notices expiry when asked for a key), and
   * once none is kept and nothing used the session for as long, lets the session and its caches go.
   */
  sweep(now = Date.now()): void {
    this.handles?.purgeStale();
    if ((this.handles?.size ?? 0) === 0 && this.opening.size === 0) this.session.renewIfIdle(this.idleMs, now);
  }

  private registerMetrics(metrics: MetricsService): void {
    const registers = [metrics.registry];
    const self = () => this;
    new Gauge({
      name: 'lgw_table_handles',
      help: 'Open table handles kept for reads (TABLE_HANDLE_CACHE_BYTES)',
      registers,
      collect() {
        this.set(self().keptHandles());
      },
    });
    new Gauge({
      name: 'lgw_table_handle_bytes',
      help: 'Estimated memory of the kept table handles (what TABLE_HANDLE_CACHE_BYTES bounds)',
      registers,
      collect() {
        this.set(self().keptHandleBytes());
      },
    });
    new Counter({
      name: 'lgw_table_handle_opens_total',
      help: 'Table handles opened for reads because none was kept (cache misses)',
      registers,
      collect() {
        this.reset();
        this.inc(self().openedHandles());
      },
    });
    new Gauge({
      name: 'lgw_lance_session_cache_bytes',
      help: "Bytes in the shared Lance session's index and metadata caches (LANCE_INDEX_CACHE_BYTES + LANCE_METADATA_CACHE_BYTES bound them)",
      registers,
      collect() {
        this.set(self().sessionStats().bytes);
      },
    });
    new Gauge({
      name: 'lgw_lance_session_cache_items',
      help: "Entries in the shared Lance session's caches (approximate)",
      registers,
      collect() {
        this.set(self().sessionStats().items);
      },
    });
  }

  /** Closes (once no request uses them) the kept handles of every table under a location prefix. */
  forget(prefix: string): void {
    if (!this.handles) return;
    for (const key of [...this.handles.keys()]) {
      const location = key.slice(0, key.indexOf('\0'));
      if (location === prefix || location.startsWith(`${prefix}/`)) this.handles.delete(key);
    }
  }

  /** How many handles are kept open (for tests and metrics). */
  keptHandles(): number {
    return this.handles?.size ?? 0;
  }

  /** The estimated memory of the kept handles, what TABLE_HANDLE_CACHE_BYTES bounds (for tests and metrics). */
  keptHandleBytes(): number {
    return this.handles?.calculatedSize ?? 0;
  }

  /** How many handles were opened to be kept, since the start (the cache's misses; for tests and metrics). */
  openedHandles(): number {
    return this.handleOpens;
  }

  /** The shared Lance session's caches (for tests and metrics). */
  sessionStats(): SessionStats {
    return this.session.stats();
  }

  /**
   * Runs a read with a kept handle (opened on first use): latest of main, or the branch and/or version `at` names.
   * The handle must not be changed (no checkout, no writes): use `withTable` for those. A failure the caller did not
   * cause closes the handle.
   */
  async read<T>(location: string, fn: (t: lancedb.Table) => Promise<T>, at?: number | TableRef): Promise<T> {
    const h = await this.lease(location, at);
    try {
      return await fn(h.table);
    } catch (err) {
      const translated = this.translate(err);
      // The caller's mistake (a bad filter, say) leaves the handle good; anything else may mean it is not.
      if (!(translated instanceof ApiError && translated.status < 500)) this.drop(location, at, h);
      throw translated;
    } finally {
      h.release();
    }
  }

  /** A kept handle for a streamed answer: `release` when done (never close it). */
  async lease(location: string, at?: number | TableRef): Promise<{ table: lancedb.Table; release: () => void }> {
    if (!this.handles) {
      const h = await this.open(location, at);
      return { table: h.table, release: h.close };
    }
    const ref: TableRef = typeof at === 'number' ? { version: at } : (at ?? {});
    const key = this.keyOf(location, ref);
    // A read on a kept handle uses the session's caches (so does a write): the session is in use.
    this.session.touch();
    let h = this.handles.get(key)?.h;
    if (!h) {
      let pending = this.opening.get(key);
      if (!pending) {
        pending = this.openKept(location, ref).finally(() => this.opening.delete(key));
        this.opening.set(key, pending);
        pending.then(
          (opened) => this.keep(key, opened),
          () => undefined,
        );
      }
      h = await pending;
    }
    const held = h;
    held.leases++;
    let released = false;
    return {
      table: held.table,
      release: () => {
        if (released) return;
        released = true;
        held.leases--;
        if (held.evicted && held.leases === 0) closeHandle(held);
      },
    };
  }

  /**
   * Puts a handle in the cache with its estimated memory (again, when that changed). One the cache does not take
   * (larger than its whole bound) is closed once its leases end, like an evicted one.
   */
  private keep(key: string, h: CachedHandle): void {
    if (h.evicted || !this.handles) return;
    this.handles.set(key, { h, bytes: h.bytes });
    if (this.handles.peek(key)?.h !== h && !h.evicted) {
      h.evicted = true;
      if (h.leases === 0) closeHandle(h);
    }
  }

  private drop(location: string, at: number | TableRef | undefined, h: { table: lancedb.Table }): void {
    if (!this.handles) return;
    const key = this.keyOf(location, typeof at === 'number' ? { version: at } : (at ?? {}));
    if (this.handles.get(key)?.h.table === h.table) this.handles.delete(key);
  }

  private keyOf(location: string, ref: TableRef): string {
    return `${location}\0${branchOf(ref.branch) ?? ''}\0${ref.version ?? ''}`;
  }

  private async openKept(location: string, ref: TableRef): Promise<CachedHandle> {
    // A handle of the latest version checks for newer commits at every read; a pinned one never moves.
    const { conn, table } = await this.openAt(location, ref, ref.version === undefined);
    this.handleOpens++;
    const h: CachedHandle = { table, conn, leases: 0, evicted: false, bytes: handleBytes(1) };
    // Sized as a table of one fragment until its statistics (read from the manifest in memory, off the request's
    // path) tell how many it has: then sized again if it is kept by then, and kept at that size if not yet.
    table.stats().then(
      (s) => {
        h.bytes = handleBytes(s.fragmentStats.numFragments);
        const key = this.keyOf(location, ref);
        const kept = this.handles?.peek(key);
        if (kept?.h === h && kept.bytes !== h.bytes) this.keep(key, h);
      },
      () => undefined,
    );
    return h;
  }

  /** Opens the table at `ref` (branch and/or version) on a new connection; both are the caller's to close. */
  private async openAt(
    location: string,
    ref: TableRef,
    latestOnEveryRead = false,
  ): Promise<{ conn: lancedb.Connection; table: lancedb.Table }> {
    const { dir, name, options } = this.storage.engineTarget(location);
    const conn = await lancedb
      .connect(dir, {
        ...(options ? { storageOptions: options } : {}),
        ...(latestOnEveryRead ? { readConsistencyInterval: 0 } : {}),
        session: this.session.get(),
      })
      .catch((err) => {
        throw this.translate(err);
      });
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
      return { conn, table };
    } catch (err) {
      table?.close();
      conn.close();
      throw this.translate(err);
    }
  }

  /**
   * A connection to the folder holding a table (with the server's storage options on object stores), and its name:
   * for writes, which count as use of the session.
   */
  private async connect(location: string): Promise<{ conn: lancedb.Connection; name: string }> {
    this.session.touch();
    const { dir, name, options } = this.storage.engineTarget(location);
    return { conn: await lancedb.connect(dir, { ...(options ? { storageOptions: options } : {}), session: this.session.get() }), name };
  }

  /**
   * `fn` is told of every location (and branch) the engine may have committed to, once the change is done:
   * catalog-managed versions record them (src/modules/catalog/versions/version-adoption.service.ts). Listeners must not fail:
   * the change is in, so its request must succeed (a failure is logged here, never thrown).
   */
  onWritten(fn: (location: string, branch?: string) => Promise<unknown>): void {
    this.writeListeners.push(fn);
  }

  /**
   * `fn` is told, after each commit the gateway makes, about how many bytes it added to the table's store (an
   * estimate the storage refresher's next measurement replaces; docs/usage-and-quotas.md): the growth of the data
   * files the table's latest version reads (engine statistics before and after the commit, on the handle that
   * committed; for the wrapper API's commits, such as index builds, with its indices' sizes), plus the commit's
   * manifest and transaction file (commitOverhead). A create or an overwrite adds all of its version's data files; a
   * delete's deletion file and a shallow clone's manifest are left to the measurement. Nothing is read from the store
   * for it. Listeners must be cheap and must not throw.
   */
  onStored(fn: (location: string, bytes: number) => void): void {
    this.storedListeners.push(fn);
  }

  private stored(location: string, bytes: number): void {
    if (!(bytes > 0)) return;
    for (const fn of this.storedListeners) {
      try {
        fn(location, bytes);
      } catch (err) {
        this.log.warn(`a storage listener failed after a commit to ${location}: ${(err as Error).message}`);
      }
    }
  }

  private async written(location: string, branch?: string): Promise<void> {
    for (const fn of this.writeListeners) {
      await fn(location, branchOf(branch)).catch((err: unknown) =>
        this.log.warn(`a write listener failed after a commit to ${location}: ${(err as Error).message}`),
      );
    }
  }

  /** Runs `fn` with a table handle (the wrapper API) that may commit, closing it afterwards; listeners are told. */
  async withTable<T>(location: string, fn: (t: lancedb.Table) => Promise<T>, at?: number | TableRef): Promise<T> {
    this.session.touch();
    const counted = this.storedListeners.length > 0;
    // Its footprints count indices too: the next native write reads its own.
    this.footprints.delete(this.keyOf(location, { branch: typeof at === 'object' ? at?.branch : undefined }));
    let grown = 0;
    const r = await this.readTable(
      location,
      async (table) => {
        const before = counted ? await footprintWithIndices(table) : null;
        const out = await fn(table);
        if (before) grown = growth(before, await footprintWithIndices(table));
        return out;
      },
      at,
    );
    this.stored(location, grown);
    await this.written(location, typeof at === 'object' ? at?.branch : undefined);
    return r;
  }

  /** Runs `fn` with a table handle that only reads (nothing is committed, so no listener is told), closing it afterwards. */
  async readTable<T>(location: string, fn: (t: lancedb.Table) => Promise<T>, at?: number | TableRef): Promise<T> {
    const handle = await this.open(location, at);
    try {
      return await fn(handle.table);
    } catch (err) {
      throw this.translate(err);
    } finally {
      handle.close();
    }
  }

  /** The table's latest version (of `branch` when one is named), read only. */
  latestVersion(location: string, branch?: string): Promise<number> {
    return this.withNativeHandle(location, (n) => n.version(), branch);
  }

  /**
   * A table handle that outlives the call (a streamed answer); the caller must call `close`. `at` picks a version
   * (a number, as the remote client's checkout) and/or a branch; latest of main by default.
   */
  async open(location: string, at?: number | TableRef): Promise<{ table: lancedb.Table; close: () => void }> {
    const { conn, table } = await this.openAt(location, typeof at === 'number' ? { version: at } : (at ?? {}));
    let closed = false;
    return {
      table,
      close: () => {
        if (closed) return;
        closed = true;
        table.close();
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
  async stats(location: string, branch?: string, hasData?: boolean): Promise<TableStats> {
    if (!(hasData ?? (await this.storage.hasData(location)))) return EMPTY_STATS;
    return this.read(
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
    hasData?: boolean,
  ): Promise<{ version: number; schema: JsonSchema } | null> {
    if (!(hasData ?? (await this.storage.hasData(location)))) return null;
    return this.read(location, async (table) => ({ version: await table.version(), schema: jsonSchema(await table.schema(), dialect) }), {
      version,
      branch,
    });
  }

  /**
   * The version and schema of the version a tag points to (in whichever branch): 404 (code 8) for an unknown tag.
   * A handle of its own, checked out at the tag, closed afterwards.
   */
  async describeTag(location: string, dialect: SchemaDialect, tag: string): Promise<{ version: number; schema: JsonSchema }> {
    const h = await this.open(location);
    try {
      await h.table.checkout(tag);
      return { version: await h.table.version(), schema: jsonSchema(await h.table.schema(), dialect) };
    } catch (err) {
      throw this.translate(err);
    } finally {
      h.close();
    }
  }

  /**
   * Every version of a table (of `branch`, main by default), oldest first, with the manifest each one is committed
   * in. A branch lists the versions of main it was forked from too, as the engine reports them.
   */
  async versions(location: string, branch?: string): Promise<TableVersionInfo[]> {
    const listed = await this.read(location, (t) => t.listVersions(), { branch });
    const manifests = await manifestsOf(this.storage, location, branchOf(branch));
    return listed
      .map((v) => {
        const m = manifests.get(v.version);
        return {
          version: v.version,
          manifest_path:
            m?.path ?? this.storage.objectPath(`${versionsDir(location, branchOf(branch))}/${U64_MAX - BigInt(v.version)}.manifest`),
          ...(m ? { manifest_size: m.size } : {}),
          timestamp_millis: v.timestamp.getTime(),
          timestamp: v.timestamp.toISOString(),
          metadata: v.metadata ?? {},
        };
      })
      .sort((a, b) => a.version - b.version);
  }

  /**
   * Runs `fn` with the native table handle (raw IPC writes), of `branch` when one is named (main otherwise). A branch
   * the table does not have is a 404 (code 22), never main's data. `write` says how its bytes are counted.
   */
  async withNative<T>(location: string, fn: (t: NativeTable) => Promise<T>, branch?: string, write: NativeWrite = {}): Promise<T> {
    this.session.touch();
    const counted = this.storedListeners.length > 0;
    const key = this.keyOf(location, { branch });
    let grown = 0;
    const r = await this.withNativeHandle(
      location,
      async (n) => {
        const body = write.overwrites ? undefined : write.bodyBytes;
        let before: Footprint | null = null;
        if (counted) {
          // The statistics (the manifest is in memory: nothing is read from the store) only when this replica did not
          // see the version the handle is at committed, or saw it estimated and needs exact bytes.
          const known = this.footprints.get(key);
          const at = known && (body !== undefined || known.exact) ? await n.version().catch(() => null) : null;
          before = known && at === known.version ? known : await dataBytes(n);
        }
        const out = await fn(n);
        if (before && body !== undefined) {
          const version = await n.version().catch(() => null);
          if (version !== null && version !== before.version) {
            const fragments = before.fragments + 1;
            grown = body + commitOverhead(fragments);
            this.footprints.set(key, { version, bytes: before.bytes + body, fragments, exact: false });
          }
        } else if (before) {
          const after = await dataBytes(n);
          // An overwrite's data files are all new (the old ones stay with the older versions).
          grown = growth(before, after, write.overwrites);
          if (after) this.footprints.set(key, after);
        }
        return out;
      },
      branch,
    );
    this.stored(location, grown);
    await this.written(location, branch);
    return r;
  }

  private async withNativeHandle<T>(location: string, fn: (t: NativeTable) => Promise<T>, branch?: string): Promise<T> {
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
    const { conn, name } = await this.connect(location).catch((err) => {
      throw this.translate(err);
    });
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
    const { conn, name } = await this.connect(location).catch((err) => {
      throw this.translate(err);
    });
    try {
      const t = await nativeOf(conn).createTable(name, ipcFile, mode, [], undefined);
      let version: number;
      let bytes = 0;
      try {
        version = await t.version();
        // Every data file of the new version is new (an overwrite's old files stay with the older versions).
        if (this.storedListeners.length > 0) {
          const after = await dataBytes(t);
          bytes = mode === 'create' ? written0(after) : after ? after.bytes + commitOverhead(after.fragments) : 0;
          if (after) this.footprints.set(this.keyOf(location, {}), after);
        }
      } finally {
        t.close();
      }
      this.stored(location, bytes);
      await this.written(location);
      return version;
    } catch (err) {
      throw this.translate(err);
    } finally {
      conn.close();
    }
  }

  /**
   * A shallow clone of the table at `source` (its latest version, `version` or the version `tag` points to) as a new
   * table at `target`: a manifest of its own that refers to the source's data files, which stay in the source's
   * folder. Answers the clone's version (the source version's number).
   */
  async shallowClone(source: string, target: string, ref: { version?: number; tag?: string }): Promise<number> {
    const { conn, name } = await this.connect(target).catch((err) => {
      throw this.translate(err);
    });
    try {
      const sourceUri = this.storage.uri(source);
      const t = await nativeOf(conn).cloneTable(name, sourceUri, [], ref.version ?? null, ref.tag ?? null, true);
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

  /**
   * A new table written in several commits through one native handle, as the engine's own writer does: the first
   * `write` creates the table, each further one appends a version. The connection and the table stay open between
   * writes (opening them afresh for each chunk of a streamed create re-read the growing manifest every time).
   * `close` must be called once the writes are over; it tells the listeners when anything was committed.
   */
  async streamWriter(location: string): Promise<StreamWriter> {
    const { conn, name } = await this.connect(location).catch((err) => {
      throw this.translate(err);
    });
    let table: NativeTable | undefined;
    let closed = false;
    return {
      write: async (ipcFile) => {
        if (closed) throw new Error('stream writer used after close');
        try {
          if (table) return (await table.add(ipcFile, 'append')).version;
          table = await nativeOf(conn).createTable(name, ipcFile, 'create', [], undefined);
          return await table.version();
        } catch (err) {
          throw this.translate(err);
        }
      },
      close: async () => {
        if (closed) return;
        closed = true;
        const last = table && this.storedListeners.length > 0 ? await dataBytes(table) : null;
        if (last) this.footprints.set(this.keyOf(location, {}), last);
        const bytes = written0(last);
        table?.close();
        conn.close();
        if (table) {
          this.stored(location, bytes);
          await this.written(location);
        }
      },
    };
  }

  async append(location: string, ipcFile: Buffer, mode: 'append' | 'overwrite' = 'append', branch?: string): Promise<number> {
    return this.withNative(
      location,
      async (t) => (await t.add(ipcFile, mode)).version,
      branch,
      mode === 'overwrite' ? { overwrites: true } : { bodyBytes: ipcFile.length },
    );
  }

  /**
   * Engine errors as the errors to answer with, through the one table (engine-errors.ts); server paths are cut from
   * messages. `context` names what the caller asked for (a branch), for messages that cannot.
   */
  translate(err: unknown, context: EngineErrorContext = {}): unknown {
    return translateEngineError(err, this.storage.rootsForMessages(), context);
  }
}
