import * as path from 'node:path';
import { Injectable } from '@nestjs/common';
import { LanceEngine } from './lance-engine';
import { StorageFile, TableStorage } from '../storage/table-storage.service';

/** When the files of a write that died were made: from its start to shortly after its last heartbeat. */
export interface WriteWindow {
  fromMs: number;
  toMs: number;
  /** Unreferenced files newer than `toMs` and than this mean someone may be writing the table now. */
  busyAfterMs: number;
}

export type GarbageFinding =
  | { kind: 'files'; files: StorageFile[] }
  /** Another writer may be at work on the table: try again later. */
  | { kind: 'busy' }
  /** The table's versions could not be read as expected: nothing may be deleted. */
  | { kind: 'unsafe'; reason: string };

/** Lance's V2 manifest names count down from u64::MAX (`_versions/<u64::MAX - version>.manifest`). */
const U64_MAX = (1n << 64n) - 1n;
const V2_NAME_MIN = U64_MAX - (1n << 53n);

function versionOfManifest(name: string): number | null {
  const m = /^(\d+)\.manifest$/.exec(name);
  if (!m) return null;
  const n = BigInt(m[1]);
  return Number(n > V2_NAME_MIN ? U64_MAX - n : n);
}

/**
 * The data files an in-place write (overwrite, append, merge) left in a table's folder when it was cut off before
 * its commit: files under `data/` that no version's manifest names. Lance manifests carry each data file's path as
 * a plain string, so a file is referenced when its name occurs in a manifest; before trusting that, the latest
 * manifest must name exactly as many existing files as its version says it has (`total_data_files`), so a manifest
 * format this check cannot read deletes nothing. Only files made while the dead writer lived are candidates; an
 * unreferenced file younger than that and than the reclaim age means another writer (for instance a namespace-mode
 * client) may be mid-write, and the table is left alone for now.
 */
@Injectable()
export class TableGarbage {
  constructor(
    private readonly storage: TableStorage,
    private readonly engine: LanceEngine,
  ) {}

  async find(location: string, window: WriteWindow): Promise<GarbageFinding> {
    const all = await this.storage.listFiles(location);
    const dataPrefix = path.join(location, 'data') + path.sep;
    const data = all.filter((f) => f.path.startsWith(dataPrefix));
    const manifests = all.filter(
      (f) =>
        f.path.endsWith('.manifest') && !f.path.startsWith(dataPrefix) && !f.path.startsWith(path.join(location, '_indices') + path.sep),
    );
    const contents = await Promise.all(manifests.map((m) => this.storage.read(m.path)));
    const named = (f: StorageFile, buf: Buffer) => buf.includes(path.basename(f.path));

    if (manifests.length > 0) {
      const guard = await this.checkLatest(location, manifests, contents, data);
      if (guard) return { kind: 'unsafe', reason: guard };
    }
    const unreferenced = data.filter((f) => !contents.some((c) => named(f, c)));
    if (unreferenced.some((f) => f.modifiedMs > window.toMs && f.modifiedMs > window.busyAfterMs)) return { kind: 'busy' };
    return { kind: 'files', files: unreferenced.filter((f) => f.modifiedMs >= window.fromMs && f.modifiedMs <= window.toMs) };
  }

  /** null when the latest main-branch manifest names as many existing data files as its version reports. */
  private async checkLatest(location: string, manifests: StorageFile[], contents: Buffer[], data: StorageFile[]): Promise<string | null> {
    const versionsDir = path.join(location, '_versions');
    let latest: { version: number; content: Buffer } | null = null;
    manifests.forEach((m, i) => {
      if (path.dirname(m.path) !== versionsDir) return;
      const v = versionOfManifest(path.basename(m.path));
      if (v !== null && (!latest || v > latest.version)) latest = { version: v, content: contents[i] };
    });
    const found = latest as { version: number; content: Buffer } | null;
    if (!found) return 'no manifest under _versions';
    let reported: string | undefined;
    try {
      const versions = await this.engine.readTable(location, (t) => t.listVersions());
      reported = versions.find((v) => v.version === found.version)?.metadata?.total_data_files;
    } catch (err) {
      return `versions unreadable: ${(err as Error).message}`;
    }
    if (reported === undefined) return `version ${found.version} reports no total_data_files`;
    const named = data.filter((f) => found.content.includes(path.basename(f.path))).length;
    return named === Number(reported) ? null : `version ${found.version} names ${named} of its ${reported} data files`;
  }
}
