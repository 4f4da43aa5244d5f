import { createHash, Hash } from 'node:crypto';

/**
 * The digest of a request body that is streamed to its handler (an Arrow body is never buffered): whoever reads the
 * body feeds it here as it goes, so that a write's stored outcome can be matched with its retries' bodies
 * (src/modules/idempotency/). Nothing is hashed unless a digest was asked for on the request.
 */
const DIGEST = Symbol('lgw.bodyDigest');

type WithDigest = { [DIGEST]?: Hash };

/** Starts hashing the request's streamed body; the returned function gives the hex digest of what was read. */
export function watchBodyDigest(req: object): () => string {
  const hash = createHash('sha256');
  (req as WithDigest)[DIGEST] = hash;
  let digest: string | undefined;
  return () => (digest ??= hash.digest('hex'));
}

/** The hash fed with the request's streamed body, if one was asked for. */
export function bodyDigestOf(req: object): Hash | undefined {
  return (req as WithDigest)[DIGEST];
}

/** The digest of a parsed (JSON) body. */
export function jsonDigest(body: unknown): string {
  return createHash('sha256')
    .update(JSON.stringify(body ?? null))
    .digest('hex');
}

/**
 * What a write with a streamed body must pass just before it commits (and after its body has been read): the
 * request's exactly-once check, which runs while the body arrives instead of before it (src/modules/idempotency/).
 * It throws when the write must not run (an earlier attempt already made it, or is still running).
 */
const COMMIT_GATE = Symbol('lgw.commitGate');

type WithGate = { [COMMIT_GATE]?: () => Promise<void> };

export function setCommitGate(req: object, gate: () => Promise<void>): void {
  (req as WithGate)[COMMIT_GATE] = gate;
}

export function commitGateOf(req: object): (() => Promise<void>) | undefined {
  return (req as WithGate)[COMMIT_GATE];
}
