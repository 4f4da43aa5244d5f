import * as lancedb from '@lancedb/lancedb';
import type { EngineStats } from './lance-native';

// The write-time estimate of what a commit adds to a table's store (LanceEngine.onStored), from the engine's
// statistics before and after it: nothing is read from the store for it.

/** A version's size as the write-time estimate sees it (LanceEngine.onStored). */
export interface Footprint {
  version: number;
  /** Data bytes of the version (plus its indices' sizes, for wrapper handles). */
  bytes: number;
  fragments: number;
  /** False when `bytes` was estimated from a body's size (then only `version` and `fragments` are trusted). */
  exact?: boolean;
}

/**
 * What one commit writes besides data and index files, without reading it: its manifest (about 450 bytes plus about
 * 80 per fragment listed, measured on Lance 0.39 manifests: 25.5 KB for 301 fragments; more with deletion files) and
 * its transaction file (a few hundred bytes). A slight underestimate on purpose: the next measurement corrects it.
 */
export const commitOverhead = (fragments: number): number => 640 + 80 * fragments;

/** The version a handle is at, its data bytes and fragments (never throws: null when they cannot be read). */
export async function dataBytes(t: { stats(): Promise<EngineStats>; version(): Promise<number> }): Promise<Footprint | null> {
  try {
    const s = await t.stats();
    return { version: await t.version(), bytes: s.totalBytes, fragments: s.fragmentStats.numFragments, exact: true };
  } catch {
    return null;
  }
}

/** dataBytes plus the indices' sizes, for a wrapper handle (null when they cannot be read). */
export async function footprintWithIndices(t: lancedb.Table): Promise<Footprint | null> {
  const data = await dataBytes(t);
  if (data === null) return null;
  try {
    return { ...data, bytes: data.bytes + (await t.listIndices()).reduce((n, i) => n + (i.sizeBytes ?? 0), 0) };
  } catch {
    return data;
  }
}

/**
 * What a commit from `before` to `after` added to the store: the growth of the version's data (and index) bytes, all
 * of them for an overwrite, and its manifest and transaction file; nothing when no version was committed.
 */
export function growth(before: Footprint | null, after: Footprint | null, overwrites = false): number {
  if (!before || !after || after.version === before.version) return 0;
  return (overwrites ? after.bytes : Math.max(0, after.bytes - before.bytes)) + commitOverhead(after.fragments);
}

/** What a new table's first `after.version` versions wrote: all its data, and a manifest per version. */
export function written0(after: Footprint | null): number {
  if (!after) return 0;
  let overhead = 0;
  // One commit per version; a streamed create adds about one fragment per chunk.
  for (let v = 1; v <= after.version; v++) overhead += commitOverhead(Math.max(1, Math.round((after.fragments * v) / after.version)));
  return after.bytes + overhead;
}
