import * as lancedb from '@lancedb/lancedb';

/**
 * What a kept table handle holds in memory, estimated from its fragment count: the table's manifest (one entry per
 * fragment) and the handle itself. Measured with @lancedb/lancedb 0.39 on a shared session too small to hold the
 * manifests, so that the handles alone pinned them (RSS over 200 to 3,000 open handles, jemalloc): 8.8 KiB a handle
 * of one fragment (2 columns), 21 KiB at 20 fragments, 138 KiB at 200, 88 KiB at 100 fragments of 40 columns. So
 * 8 KiB plus 0.8 KiB a fragment (the widest table's slope). What a handle reads for a query (data files' metadata,
 * index partitions) is in the session's caches, which are bounded on their own (SharedSession).
 */
export const HANDLE_BASE_BYTES = 8 * 1024;
export const HANDLE_FRAGMENT_BYTES = 820;

export function handleBytes(fragments: number): number {
  return HANDLE_BASE_BYTES + Math.max(1, fragments) * HANDLE_FRAGMENT_BYTES;
}

/** What SharedSession reports (tests, metrics). */
export interface SessionStats {
  /** Bytes in the session's caches, as the engine counts them. */
  bytes: number;
  /** Entries in the session's caches (approximate). */
  items: number;
  /** How many sessions this process has started: one at start, one more each time an idle one was let go. */
  generation: number;
}

/**
 * The one Lance session every connection of the process opens with: one index cache and one metadata cache (table
 * manifests, data files' metadata), each bounded in bytes, and one registry of object-store clients, shared by every
 * table handle, read or write. Without it each `connect()` made a session of its own with the engine's default
 * caches (6 GiB of index, 1 GiB of metadata, each), so a table reopened after its handle was closed read its
 * metadata again, and nothing bounded the sum.
 *
 * The engine's caches have no expiry and no way to be emptied, so a session left unused for the idle time is let go
 * (`renewIfIdle`): later connections get a fresh one, and the old one's memory is freed once the last handle using it
 * closes and V8 collects its wrapper (the heap release's full collection when the process goes quiet). Reads through
 * kept handles and writes count as use (`touch`); one-off reads in the background (the storage refresher's,
 * maintenance's) do not, or a refresher working through a fleet's tables would keep the caches full for good.
 */
export class SharedSession {
  private session: lancedb.Session;
  private lastUse = Date.now();
  private generation = 1;

  constructor(
    private readonly indexCacheBytes: number,
    private readonly metadataCacheBytes: number,
  ) {
    this.session = this.create();
  }

  private create(): lancedb.Session {
    return new lancedb.Session(BigInt(this.indexCacheBytes), BigInt(this.metadataCacheBytes));
  }

  /** The session to open a connection with. */
  get(): lancedb.Session {
    return this.session;
  }

  /** Marks the session used: a read on a kept handle, a write. */
  touch(now = Date.now()): void {
    this.lastUse = now;
  }

  /**
   * Lets the session go when it has not been used for `idleMs` and holds anything; true when it did. The caller
   * makes sure no kept handle still uses it (one that does would keep its caches alive until it closes).
   */
  renewIfIdle(idleMs: number, now = Date.now()): boolean {
    if (now - this.lastUse < idleMs || this.session.approxNumItems() === 0) return false;
    this.session = this.create();
    this.generation++;
    return true;
  }

  stats(): SessionStats {
    return { bytes: Number(this.session.sizeBytes()), items: this.session.approxNumItems(), generation: this.generation };
  }
}
