export type Body = AsyncIterable<Buffer | Uint8Array | string>;
export type CreateMode = 'create' | 'existok' | 'overwrite';
/** Which client dialect a request speaks: the official remote client (`db://`) or the Lance Namespace spec. */
export type Dialect = 'remote' | 'spec';

export const display = (id: string[]) => id.join('$');

export interface MergeOptions {
  on: string[];
  whenMatchedUpdateAll: boolean;
  whenMatchedUpdateAllFilt?: string;
  whenNotMatchedInsertAll: boolean;
  whenNotMatchedBySourceDelete: boolean;
  whenNotMatchedBySourceDeleteFilt?: string;
  useIndex: boolean;
  timeoutMs?: number;
}
