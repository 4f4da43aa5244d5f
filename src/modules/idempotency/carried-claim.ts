/**
 * A keyed write's claim carried by the write's own first catalog statement (docs/idempotency.md): an in-place write
 * with an Arrow body (insert, merge_insert) claims its key in the statement that looks its table up and records its
 * pending write, so the claim costs no transaction of its own. Everything else about the claim (waiting for an
 * earlier attempt, replaying its answer, the commit gate) stays with the IdempotencyInterceptor.
 *
 * A leaf file (no imports of the project's): the catalog's repository takes the statement from here.
 */

/** The values of a claim's request_outcomes row (see RequestOutcomesRepository.claim). */
export interface ClaimValues {
  /** The new row's id (a UUID): the claim's id when the statement makes the row. */
  id: string;
  databaseId: string;
  principal: string;
  scopeKey: string;
  route: string;
  bodyDigest: string | null;
  owner: string;
  leaseMs: number;
  windowMs: number;
}

/**
 * The answer of one of this replica's earlier keyed writes still to store (IdempotencyService.finish), which the
 * statement stores too: a statement of its own would be one more transaction.
 */
export interface CarriedAnswer {
  id: string;
  bodyDigest: string | null;
  status: number;
  contentType: string | null;
  answer: string;
}

/** What a write's first statement carries: its claim, and maybe an earlier write's answer. */
export interface Carried {
  claim: ClaimValues;
  answer?: CarriedAnswer;
}

/** What the statement did: the claim's id (null when the key is held by another row), and whether it stored the answer. */
export interface CarriedOutcome {
  claimed: string | null;
  stored: boolean;
}

/** What the interceptor hands a write that may carry its claim. */
export interface CarriedClaim {
  /**
   * What the write's first statement is to carry; undefined when the claim is made otherwise (it was begun
   * already). A write that takes it must `settle` it with the statement's outcome.
   */
  carry(): Carried | undefined;
  /** The statement's outcome, or its error. */
  settle(outcome: CarriedOutcome | Error): void;
  /** The body starts to arrive: a claim nobody carried is made now, on its own (while the body arrives). */
  start(): void;
}

/**
 * The claim as a data-modifying CTE of a larger statement (its parameters `$first` … `$first + 8`, see claimParams):
 * returns the row's id when the key was claimed (a new row, or an expired one taken over), nothing when it is held.
 */
export function claimSql(first: number): string {
  const p = (i: number) => `$${first + i}`;
  return `INSERT INTO request_outcomes AS o (id, database_id, principal, scope_key, route, body_digest, state, owner, lease_until, expires_at)
       VALUES (${p(0)}::uuid, ${p(1)}::uuid, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)}, 'running', ${p(6)}, now() + ${p(7)}::int * interval '1 millisecond', now() + ${p(8)}::bigint * interval '1 millisecond')
       ON CONFLICT (database_id, principal, scope_key) DO UPDATE
         SET id = EXCLUDED.id, route = EXCLUDED.route, body_digest = EXCLUDED.body_digest, state = 'running',
             owner = EXCLUDED.owner, lease_until = EXCLUDED.lease_until, status = NULL, content_type = NULL, answer = NULL,
             created_at = now(), expires_at = EXCLUDED.expires_at
         WHERE o.expires_at < now()
       RETURNING id::text AS id`;
}

/** The parameters of claimSql, in order. */
export function claimParams(v: ClaimValues): unknown[] {
  return [v.id, v.databaseId, v.principal, v.scopeKey, v.route, v.bodyDigest, v.owner, v.leaseMs, v.windowMs];
}

/**
 * Stores a carried answer, as a data-modifying CTE (parameters `$first` … `$first + 4`, see answerParams) beside the
 * claim of claimSql(`claimFirst`), whose owner it shares: returns its id when stored. One answer, found by its primary
 * key: an equality on the key is an index lookup whatever the statistics say (a prepared statement's generic plan
 * made while the table was small would scan it all for a list of ids). The claim's own key is left out (a retry
 * claiming the key of the answer in the same statement would touch its row twice): that answer is stored later.
 */
export function answerSql(first: number, claimFirst: number): string {
  const p = (i: number) => `$${first + i}`;
  const c = (i: number) => `$${claimFirst + i}`;
  return `UPDATE request_outcomes AS o
          SET state = 'done', body_digest = ${p(1)}, status = ${p(2)}::int, content_type = ${p(3)}, answer = ${p(4)}
        WHERE o.id = ${p(0)}::uuid AND o.owner = ${c(6)}
          AND NOT (o.database_id = ${c(1)}::uuid AND o.principal = ${c(2)} AND o.scope_key = ${c(3)})
       RETURNING o.id`;
}

export function answerParams(a: CarriedAnswer): unknown[] {
  return [a.id, a.bodyDigest, a.status, a.contentType, a.answer];
}

const CARRIED = Symbol('lgw.carriedClaim');

type WithClaim = { [CARRIED]?: CarriedClaim };

export function setCarriedClaim(req: object, claim: CarriedClaim): void {
  (req as WithClaim)[CARRIED] = claim;
}

export function carriedClaimOf(req: object): CarriedClaim | undefined {
  return (req as WithClaim)[CARRIED];
}
