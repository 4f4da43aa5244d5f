import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { CatalogClient, UnitOfWork } from '../../platform/db/unit-of-work';
import { claimParams, claimSql } from './carried-claim';

/** Which keyed write a row is about. */
export interface OutcomeScope {
  databaseId: string;
  principal: string;
  /** 'k:<Idempotency-Key>' or 'r:<method> <path> <x-request-id>'. */
  scopeKey: string;
}

/** A stored outcome as a retry finds it. */
export interface OutcomeRow {
  id: string;
  route: string;
  bodyDigest: string | null;
  state: 'running' | 'done';
  owner: string;
  /** Whether the running owner's lease has lapsed (it is gone, and the outcome is unknown). */
  lapsed: boolean;
  status: number | null;
  contentType: string | null;
  answer: string | null;
}

const COLUMNS =
  'id, route, body_digest AS "bodyDigest", state, owner, lease_until < now() AS lapsed, status, content_type AS "contentType", answer';

/**
 * request_outcomes: the outcome of each keyed write (see the migration). The statements a write makes (claim, find,
 * complete, release) are single statements sent straight on the driver (UnitOfWork.read, prepared), as the hot
 * catalog reads are: every write of the official client carries a request id, so they are on the write path. A write claims its key before it runs
 * (`claim`), keeps the claim alive while it runs (`renew`), and stores its answer when done (`complete`) or withdraws
 * the claim when it failed (`release`). Expired rows are treated as absent and trimmed.
 */
@Injectable()
export class RequestOutcomesRepository {
  constructor(private readonly uow: UnitOfWork) {}

  private get db(): CatalogClient {
    return this.uow.db;
  }

  /**
   * Claims the key for a request about to run (a new row, or an expired one taken over): the claim's id, or the row
   * that holds the key when another request has it.
   */
  async claim(
    s: OutcomeScope,
    v: { route: string; bodyDigest: string | null; owner: string; leaseMs: number; windowMs: number },
  ): Promise<{ claimed: string } | { existing: OutcomeRow }> {
    const id = randomUUID();
    const claimed = await this.uow.read<{ id: string }>(
      claimSql(1),
      claimParams({ id, databaseId: s.databaseId, principal: s.principal, scopeKey: s.scopeKey, ...v }),
      'lgw_outcome_claim',
    );
    if (claimed.length) return { claimed: claimed[0].id };
    const existing = await this.find(s);
    // Expired between the two statements (or released meanwhile): the caller tries again.
    return existing ? { existing } : this.claim(s, v);
  }

  async find(s: OutcomeScope): Promise<OutcomeRow | null> {
    const rows = await this.uow.read<OutcomeRow>(
      `SELECT ${COLUMNS} FROM request_outcomes
        WHERE database_id = $1::uuid AND principal = $2 AND scope_key = $3 AND expires_at >= now()`,
      [s.databaseId, s.principal, s.scopeKey],
      'lgw_outcome_find',
    );
    return rows[0] ?? null;
  }

  /**
   * Stores the answers of claimed requests (each kept until its claim's window ends), several in one statement: the
   * service gathers the answers of writes that end close together (IdempotencyService.finish). `o.id = ANY(…)` lets
   * the planner find the rows through the primary key: a prepared statement's generic plan guesses the unnest's size
   * and would otherwise scan the whole table (a day of keyed writes) with a hash join.
   */
  async complete(
    owner: string,
    answers: { id: string; bodyDigest: string | null; status: number; contentType: string | null; answer: string }[],
  ): Promise<void> {
    if (!answers.length) return;
    await this.uow.read(
      `UPDATE request_outcomes AS o
          SET state = 'done', body_digest = a.digest, status = a.status, content_type = a.ctype, answer = a.answer
         FROM unnest($2::uuid[], $3::text[], $4::int[], $5::text[], $6::text[]) AS a(id, digest, status, ctype, answer)
        WHERE o.id = ANY($2::uuid[]) AND o.id = a.id AND o.owner = $1
       RETURNING o.id`,
      [
        owner,
        answers.map((a) => a.id),
        answers.map((a) => a.bodyDigest),
        answers.map((a) => a.status),
        answers.map((a) => a.contentType),
        answers.map((a) => a.answer),
      ],
      'lgw_outcome_complete',
    );
  }

  /** Withdraws a claim whose request failed (nothing happened): a retry runs afresh. */
  async release(id: string, owner: string): Promise<void> {
    await this.uow.read(
      `DELETE FROM request_outcomes WHERE id = $1::uuid AND owner = $2 AND state = 'running' RETURNING id`,
      [id, owner],
      'lgw_outcome_release',
    );
  }

  /** Extends the leases of a replica's running claims. */
  async renew(ids: string[], owner: string, leaseMs: number): Promise<void> {
    await this.db.$executeRawUnsafe(
      `UPDATE request_outcomes SET lease_until = now() + $3 * interval '1 millisecond'
        WHERE id = ANY($1::uuid[]) AND owner = $2 AND state = 'running'`,
      ids,
      owner,
      leaseMs,
    );
  }

  /** Deletes up to `limit` expired rows; how many went. */
  async trim(limit: number): Promise<number> {
    return this.db.$executeRawUnsafe(
      `DELETE FROM request_outcomes WHERE id IN (SELECT id FROM request_outcomes WHERE expires_at < now() LIMIT $1)`,
      limit,
    );
  }
}
