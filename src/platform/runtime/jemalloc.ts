import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * jemalloc's control interface (`mallctl`) in this process, when jemalloc is the allocator: scripts/start.sh preloads
 * it (LD_PRELOAD), and the Lance engine's native code allocates through it. Called through koffi, an FFI library
 * whose package carries prebuilt binaries for the common platforms (it loads them without its install script, which
 * only builds from source where none fits), because Node has no binding of its own and an addon of ours would need a
 * compiler at install. koffi is an optional dependency: where it cannot be installed or loaded, retention is off.
 *
 * Only what allocator-retention.ts needs: freed pages kept (dirty), a count of large allocations (activity), the
 * dirty decay of each arena, and a purge.
 */
export class Jemalloc {
  /** MALLCTL_ARENAS_ALL: "all arenas" in `arena.<i>.*` and `stats.arenas.<i>.*` names. */
  private static readonly ALL = 4096;
  private readonly u64 = Buffer.alloc(8);
  private readonly one = Buffer.alloc(8);
  private readonly page: number;
  /**
   * The oversize arena's index (MALLOC_CONF `oversize_threshold` > 0), or -1: jemalloc reserves the index after the
   * automatic arenas at start-up and makes the arena on the first oversize allocation. Taken once, before any arena
   * could be made by hand (`arenas.create`, which nothing here calls).
   */
  readonly oversizeArena: number;

  private constructor(
    private readonly mallctl: MallctlFn,
    /** The version string jemalloc reports (e.g. "5.3.0-0-g54eaed1d8b56b1aa528be3bdd1877e59c56fa90c"). */
    readonly version: string,
  ) {
    this.one.writeBigUInt64LE(1n);
    this.page = this.readSize('arenas.page');
    this.oversizeArena = this.readSize('opt.oversize_threshold') > 0 ? this.readUnsigned('arenas.narenas') - 1 : -1;
  }

  /**
   * The running jemalloc, or why there is none: it must be preloaded (LD_PRELOAD) and mapped into this process
   * already — loading it now would start a second allocator that nothing uses — and built with statistics.
   */
  static open(env: NodeJS.ProcessEnv = process.env): Jemalloc | string {
    const lib = (env.LD_PRELOAD ?? '').split(/[\s:]+/).find((p) => /jemalloc/.test(path.basename(p)));
    if (!lib) return 'jemalloc is not preloaded';
    let maps: string;
    try {
      maps = fs.readFileSync('/proc/self/maps', 'utf8');
    } catch {
      return 'cannot read /proc/self/maps';
    }
    if (!maps.includes(path.basename(lib))) return `${lib} is in LD_PRELOAD but not loaded`;
    try {
      // Loaded only here: a process without jemalloc never maps the native binding.
      const koffi = require('koffi') as typeof import('koffi');
      const so = koffi.load(lib);
      const mallctl = so.func(
        'int mallctl(const char *name, _Inout_ void *oldp, _Inout_ size_t *oldlenp, void *newp, size_t newlen)',
      ) as unknown as MallctlFn;
      // The same function, declared for reading a string (`version` is a const char *).
      const readString = so.func(
        'int mallctl(const char *name, _Out_ const char **oldp, _Inout_ size_t *oldlenp, void *newp, size_t newlen)',
      );
      const version: [string | null] = [null];
      if (readString('version', version, [8], null, 0) !== 0 || !version[0]) return "jemalloc's mallctl does not answer";
      const je = new Jemalloc(mallctl, version[0]);
      if (!je.readBool('config.stats')) return 'jemalloc is built without statistics';
      return je;
    } catch (err) {
      return `jemalloc's mallctl is not callable: ${(err as Error).message}`;
    }
  }

  /**
   * As of now, in all arenas: bytes in freed pages kept mapped for reuse (dirty), and large allocations (above the
   * small size classes, 14 KiB) made so far, a measure of activity.
   */
  stats(): { dirtyBytes: number; largeAllocations: number } {
    this.mallctl('epoch', null, null, this.one, 8); // refreshes the statistics read below
    return {
      dirtyBytes: this.readSize(`stats.arenas.${Jemalloc.ALL}.pdirty`) * this.page,
      largeAllocations: this.readSize(`stats.arenas.${Jemalloc.ALL}.large.nmalloc`),
    };
  }

  /** The dirty decay the process started with (MALLOC_CONF `dirty_decay_ms`; -1: never). */
  configuredDirtyDecayMs(): number {
    return this.readSize('opt.dirty_decay_ms', true);
  }

  /**
   * Sets the dirty decay of every arena (and the default for arenas made later), on a thread of the libuv pool: `ms`
   * for the ordinary arenas, `oversizeMs` for the oversize arena. -1 keeps freed pages until a purge; setting 0 purges
   * that arena there and then, which is why none of this runs on the event loop. Arenas not made yet are skipped
   * (they take the default when made; jemalloc gives the oversize arena 0 then unless the default is -1 or 0).
   */
  async setDirtyDecay(ms: number, oversizeMs: number): Promise<void> {
    await this.writeSsizeAsync('arenas.dirty_decay_ms', ms, true);
    const n = this.readUnsigned('arenas.narenas');
    for (let i = 0; i < n; i++) await this.writeSsizeAsync(`arena.${i}.dirty_decay_ms`, i === this.oversizeArena ? oversizeMs : ms, false);
  }

  /** Whether jemalloc's background threads are on (MALLOC_CONF `background_thread`, or the last setBackgroundThreads). */
  backgroundThreads(): boolean {
    return this.readBool('background_thread');
  }

  /** Starts or stops jemalloc's background threads, on a thread of the libuv pool (it creates or joins threads). */
  setBackgroundThreads(on: boolean): Promise<void> {
    return this.writeAsync('background_thread', Buffer.from([on ? 1 : 0]), true);
  }

  /** The dirty decay of arena `i` (-1: never), or undefined when that arena does not exist yet. */
  dirtyDecayOf(i: number): number | undefined {
    const b = Buffer.alloc(8);
    return this.mallctl(`arena.${i}.dirty_decay_ms`, b, [8], null, 0) === 0 ? Number(b.readBigInt64LE()) : undefined;
  }

  /** Hands every arena's freed pages back to the system, on a thread of the libuv pool (it takes milliseconds). */
  purge(): Promise<void> {
    return this.writeAsync(`arena.${Jemalloc.ALL}.purge`, null, true);
  }

  /** A size_t (or, `signed`, a ssize_t). */
  private readSize(name: string, signed = false): number {
    const rc = this.mallctl(name, this.u64, [8], null, 0);
    if (rc !== 0) throw new Error(`mallctl ${name}: ${rc}`);
    return Number(signed ? this.u64.readBigInt64LE() : this.u64.readBigUInt64LE());
  }

  private readUnsigned(name: string): number {
    const b = Buffer.alloc(4);
    const rc = this.mallctl(name, b, [4], null, 0);
    if (rc !== 0) throw new Error(`mallctl ${name}: ${rc}`);
    return b.readUInt32LE();
  }

  private readBool(name: string): boolean {
    const b = Buffer.alloc(1);
    return this.mallctl(name, b, [1], null, 0) === 0 && b[0] !== 0;
  }

  /** Writes a ssize_t on the libuv pool; `required`: a failure rejects (else an arena not made yet is skipped). */
  private writeSsizeAsync(name: string, v: number, required: boolean): Promise<void> {
    const b = Buffer.alloc(8);
    b.writeBigInt64LE(BigInt(v));
    return this.writeAsync(name, b, required);
  }

  /** Writes `value` (none: a command such as a purge) on the libuv pool; `required`: a failure rejects. */
  private writeAsync(name: string, value: Buffer | null, required: boolean): Promise<void> {
    return new Promise((resolve, reject) =>
      this.mallctl.async(name, null, null, value, value?.length ?? 0, (err, rc) =>
        err ? reject(err) : rc !== 0 && required ? reject(new Error(`mallctl ${name}: ${rc}`)) : resolve(),
      ),
    );
  }
}

type MallctlFn = ((name: string, oldp: Buffer | null, oldlenp: number[] | null, newp: Buffer | null, newlen: number) => number) & {
  async: (
    name: string,
    oldp: Buffer | null,
    oldlenp: number[] | null,
    newp: Buffer | null,
    newlen: number,
    cb: (err: unknown, rc: number) => void,
  ) => void;
};
