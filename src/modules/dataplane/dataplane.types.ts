export type Body = AsyncIterable<Buffer | Uint8Array | string>;
export type CreateMode = 'create' | 'existok' | 'overwrite';
export type { Dialect } from '../../common/dialect';

export { displayId as display } from '../../common/ids';

export interface MergeOptions {
  on: string[];
  whenMatchedUpdateAll: boolean;
  whenMatchedUpdateAllFilt?: string;
  whenNotMatchedInsertAll: boolean;
  whenNotMatchedBySourceDelete: boolean;
  whenNotMatchedBySourceDeleteFilt?: string;
  useIndex: boolean;
  timeoutMs?: number;
  /** The branch to merge into; main when absent. */
  branch?: string;
}
