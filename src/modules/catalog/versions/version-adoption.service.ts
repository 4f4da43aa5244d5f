import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { branchOf, LanceEngine } from '../../../engine/lance/lance-engine';
import { TableStorage } from '../../../engine/storage/table-storage.service';
import { APP_CONFIG, AppConfig } from '../../../platform/config/config';
import { hintCache } from '../../../platform/runtime/hint-cache';
import { TableVersionsRepository } from './table-versions.repository';

const U64_MAX = (1n << 64n) - 1n;

/** How often adoptions that failed after a commit are tried again. */
const RETRY_MS = 5_000;

/**
 * Records in the catalog the versions the gateway's own engine committed to a managed table (remote-dialect writes,
 * a table the gateway created, a registered table): those commits are arbitrated by the object store's put-if-absent,
 * as for any Lance table, and adopted right after, so that namespace-mode clients, which only ask the catalog, see
 * them. Only versions newer than the catalog's latest are adopted (a version/create that lost to such a commit then
 * finds it on retry). Tables of databases without managed versioning are left alone.
 */
@Injectable()
export class VersionAdoption implements OnModuleInit, OnApplicationShutdown {
  private readonly log = new Logger('VersionAdoption');
  /**
   * Whether the table at a location has catalog-managed versions (a table's database keeps its setting while it holds
   * tables): writes to the others cost no query.
   */
  private readonly managed: LRUCache<string, boolean>;
  /** Adoptions owed after a commit whose bookkeeping could not reach the catalog: location → branches. */
  private readonly owed = new Map<string, Set<string>>();
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly repo: TableVersionsRepository,
    private readonly storage: TableStorage,
    private readonly engine: LanceEngine,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.managed = hintCache<boolean>(config.tableHintCacheBytes, () => 0);
  }

  onModuleInit(): void {
    this.engine.onWritten((location, branch) => this.afterCommit(location, branch));
  }

  onApplicationShutdown(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /**
   * Adopts what a commit the gateway just made wrote, without ever failing: the commit is in, so its request must
   * succeed. A table known to be unmanaged costs nothing. When the catalog cannot be reached the adoption is owed and
   * tried again every few seconds (and any later commit or version/create of the table adopts it too).
   */
  async afterCommit(location: string, branch?: string): Promise<void> {
    if (this.managed.get(location) === false) return;
    try {
      await this.adopt(location, branch);
    } catch (err) {
      this.log.warn(`could not record the new version(s) of ${location} in the catalog yet; retrying: ${(err as Error).message}`);
      this.owe(location, branchOf(branch) ?? '');
    }
  }

  private owe(location: string, branch: string): void {
    const branches = this.owed.get(location) ?? new Set<string>();
    branches.add(branch);
    this.owed.set(location, branches);
    if (!this.timer) {
      this.timer = setInterval(() => void this.retryOwed(), RETRY_MS);
      this.timer.unref();
    }
  }

  private async retryOwed(): Promise<void> {
    for (const [location, branches] of [...this.owed]) {
      for (const b of [...branches]) {
        try {
          await this.adopt(location, b || undefined);
          branches.delete(b);
        } catch {
          return; // still unreachable: next round
        }
      }
      if (!branches.size) this.owed.delete(location);
    }
    if (!this.owed.size && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  /** Adopts the storage versions of the table at `location` (of `branch`) newer than the catalog's latest. */
  async adopt(location: string, branch?: string): Promise<number> {
    const table = await this.repo.tableAt(location);
    // Remembered only once a table is registered there (a new table's data is written before its row exists).
    if (table) this.managed.set(location, table.managed);
    if (!table?.managed) return 0;
    const b = branchOf(branch) ?? '';
    if (b && b.split('/').some((s) => s === '' || s === '.' || s === '..')) return 0;
    const dirRel = b ? `tree/${b}/_versions` : '_versions';
    const latest = (await this.repo.find(table.id, b))?.version ?? -1;
    const dir = `${location}/${dirRel}`;
    const files = await this.storage.listFiles(dir).catch(() => []);
    const newer: Array<{ version: number; file: string; size: number; scheme: string }> = [];
    for (const f of files) {
      const name = f.path.slice(dir.length + 1);
      const m = /^(\d+)\.manifest$/.exec(name);
      if (!m) continue;
      const n = BigInt(m[1]);
      const v2 = n > U64_MAX / 2n;
      const version = Number(v2 ? U64_MAX - n : n);
      if (version > latest) newer.push({ version, file: `${dirRel}/${name}`, size: f.size, scheme: v2 ? 'V2' : 'V1' });
    }
    newer.sort((x, y) => x.version - y.version);
    let adopted = 0;
    for (const v of newer) {
      const r = await this.repo.insert({
        tableId: table.id,
        branch: b,
        version: v.version,
        manifestFile: v.file,
        manifestSize: v.size,
        eTag: null,
        namingScheme: v.scheme,
        metadata: {},
      });
      if (r === 'no-table') return adopted;
      if (r !== 'taken') adopted++;
    }
    if (adopted) this.log.debug(`adopted ${adopted} version(s) of ${location}${b ? ` (branch ${b})` : ''}`);
    return adopted;
  }
}
