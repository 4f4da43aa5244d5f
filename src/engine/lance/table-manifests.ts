import { TableStorage } from '../storage/table-storage.service';

/** Largest u64: Lance's V2 manifest names count down from it. */
export const U64_MAX = (1n << 64n) - 1n;

/** The folder of a table's (or one of its branches') manifests: `<table>/_versions`, `<table>/tree/<branch>/_versions`. */
export function versionsDir(location: string, branch: string | undefined): string {
  return branch ? `${location}/tree/${branch}/_versions` : `${location}/_versions`;
}

/**
 * The manifest files of a table by version. Lance names them `<version>.manifest` (V1) or
 * `<u64::MAX - version>.manifest` (V2, so that listing finds the newest first); detached versions (`d…`) are not
 * versions of the table. Nothing outside the table's folder is read, whatever the branch name says.
 */
export async function manifestsOf(
  storage: TableStorage,
  location: string,
  branch: string | undefined,
): Promise<Map<number, { path: string; size: number }>> {
  const out = new Map<number, { path: string; size: number }>();
  if (branch !== undefined && (branch.split('/').includes('..') || branch.startsWith('/'))) return out;
  const dir = versionsDir(location, branch);
  const files = await storage.listFiles(dir).catch(() => []);
  for (const f of files) {
    const file = f.path.slice(dir.length + 1);
    const m = /^(\d+)\.manifest$/.exec(file);
    if (!m) continue;
    const n = BigInt(m[1]);
    const version = Number(n > U64_MAX / 2n ? U64_MAX - n : n);
    out.set(version, { path: storage.objectPath(f.path), size: f.size });
  }
  return out;
}
