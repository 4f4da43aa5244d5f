import type { CarriedClaim } from '../idempotency';

/**
 * An Arrow request body as it arrives; `contentLength` is the request's Content-Length when it declared one;
 * `settled` resolves once the request has been received to its end (or its connection closed, or `maxBytes` more
 * arrived).
 */
export type Body = AsyncIterable<Buffer | Uint8Array | string> & {
  contentLength?: number;
  settled?: (maxBytes: number) => Promise<void>;
  /** To be awaited once the body has been read and before the write commits (src/platform/http/body-digest.ts). */
  beforeCommit?: () => Promise<void>;
  /** A keyed write's claim, for its first catalog statement to carry (src/modules/idempotency/carried-claim.ts). */
  claim?: CarriedClaim;
};
export type CreateMode = 'create' | 'existok' | 'overwrite';
export type { Dialect } from '../../engine/arrow/dialect';

export { displayId as display } from '../../platform/http/ids';

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
