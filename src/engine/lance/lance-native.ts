import * as lancedb from '@lancedb/lancedb';

/** The native handles of a local connection (`LocalConnection.inner`, public but not re-exported by the package). */

/** What the write-time storage estimate reads from a handle's statistics (native and wrapper handles alike). */
export interface EngineStats {
  totalBytes: number;
  fragmentStats: { numFragments: number };
}

/** The native handles of a local connection (`LocalConnection.inner`, public but not re-exported by the package). */
export interface NativeMergeBuilder {
  whenMatchedUpdateAll(condition?: string): NativeMergeBuilder;
  whenNotMatchedInsertAll(): NativeMergeBuilder;
  whenNotMatchedBySourceDelete(filter?: string): NativeMergeBuilder;
  useIndex(useIndex: boolean): NativeMergeBuilder;
  setTimeout(ms: number): void;
  execute(
    buf: Buffer,
  ): Promise<{ version: number; numInsertedRows: number; numUpdatedRows: number; numDeletedRows: number; numAttempts?: number }>;
}
export interface NativeTable {
  close(): void;
  version(): Promise<number>;
  add(buf: Buffer, mode: string): Promise<{ version: number }>;
  update(onlyIf: string | undefined, columns: Array<[string, string]>): Promise<{ rowsUpdated: number; version: number }>;
  delete(predicate: string): Promise<{ numDeletedRows: number; version: number }>;
  mergeInsert(on: string[]): NativeMergeBuilder;
  stats(): Promise<EngineStats>;
}
export interface NativeConnection {
  openTable(name: string, namespacePath: string[], storageOptions: undefined): Promise<NativeTable>;
  createTable(name: string, buf: Buffer, mode: string, namespacePath: string[], storageOptions: undefined): Promise<NativeTable>;
  cloneTable(
    targetTableName: string,
    sourceUri: string,
    targetNamespacePath: string[],
    sourceVersion: number | null,
    sourceTag: string | null,
    isShallow: boolean,
  ): Promise<NativeTable>;
}
export const nativeOf = (c: lancedb.Connection): NativeConnection => {
  const inner = (c as unknown as { inner?: NativeConnection }).inner;
  if (!inner || typeof inner.createTable !== 'function') throw new Error('@lancedb/lancedb: no native connection handle');
  return inner;
};
