import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { branchOf, LanceEngine } from '../../storage/lance-engine';
import { TableStorage } from '../../storage/table-storage.service';
import { TableVersionsRepository } from './table-versions.repository';

const U64_MAX = (1n << 64n) - 1n;

/**
 * Records in the catalog the versions the gateway's own engine committed to a managed table (remote-dialect writes,
 * a table the gateway created, a registered table): those commits are arbitrated by the object store's put-if-absent,
 * as for any Lance table, and adopted right after, so that namespace-mode clients, which only ask the catalog, see
 * them. Only versions newer than the catalog's latest are adopted (a version/create that lost to such a commit then
 * finds it on retry). Tables of databases without managed versioning are left alone.
 */
@Injectable()
export class VersionAdoption implements OnModuleInit {
  private readonly log = new Logger('VersionAdoption');

  constructor(
    private readonly repo: TableVersionsRepository,
    private readonly storage: TableStorage,
    private readonly engine: LanceEngine,
  ) {}

  onModuleInit(): void {
    this.engine.onWritten((location, branch) => this.adopt(location, branch));
  }

  /** Adopts the storage versions of the table at `location` (of `branch`) newer than the catalog's latest. */
  async adopt(location: string, branch?: string): Promise<number> {
    const table = await this.repo.managedTableAt(location);
    if (!table) return 0;
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
