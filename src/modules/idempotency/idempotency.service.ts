import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../../platform/config/config';
import { Errors } from '../../platform/http/errors';
import { ReplicaIdentity } from '../../platform/cluster/pending-locations.service';
import type { CarriedAnswer, ClaimValues } from './carried-claim';
import { OutcomeRow, OutcomeScope, RequestOutcomesRepository } from './request-outcomes.repository';

/** A keyed write this replica is running: its claim on the key. */
export interface Claim {
  id: string;
}

/** The answer of a write, as stored for its retries. */
export interface StoredAnswer {
  bodyDigest: string | null;
  status: number;
  contentType: string | null;
  answer: string;
}

/** What a keyed write finds before it runs: its own claim, or the outcome of an earlier attempt. */
export type Begun = { claim: Claim } | { done: OutcomeRow };

/** How often the leases of running claims are renewed, and stored answers and withdrawals retried. */
const TICK_MS = 2_000;
/** Rows trimmed per round, at most. */
const TRIM_BATCH = 1_000;
const TRIM_EVERY_MS = 60_000;
/**
 * Answers are stored together: the first answer to store waits this long for others, and all go in one statement
 * (at most ANSWER_BATCH), unless keyed inserts' first statements take them meanwhile, one each (carryAnswer). A write's
 * answer is sent without waiting for it; a retry that comes meanwhile finds the claim still running and waits for it
 * as for any running attempt.
 */
const ANSWER_DELAY_MS = 20;
const ANSWER_BATCH = 200;

/**
 * Exactly-once keyed writes (docs/idempotency.md). A write with a key claims it in the catalog before it runs; a
 * retry that finds the claim waits for its outcome (IDEMPOTENCY_WAIT_MS, then 503 to retry later) and is answered
 * with the stored answer once there is one. Storing an answer or withdrawing a claim never fails the request it
 * belongs to: when the catalog cannot be reached it is retried in the background, and the claim's lease is renewed
 * meanwhile, so a retry keeps waiting instead of running the write twice. A claim whose lease lapsed belongs to a
 * replica that stopped mid-request: its outcome is unknown, and a retry is refused (409) rather than risk a second
 * effect.
 */
@Injectable()
export class IdempotencyService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly log = new Logger('Idempotency');
  /** Claims of requests under way here, and of finished ones whose answer is not stored yet. */
  private readonly running = new Set<string>();
  /** Stored answers and withdrawn claims still to write (the catalog was unreachable). */
  private readonly owed = new Map<string, () => Promise<void>>();
  /** Answers waiting for their statement (ANSWER_DELAY_MS), by claim id. */
  private readonly answers = new Map<string, StoredAnswer & { id: string }>();
  private answerTimer?: NodeJS.Timeout;
  private timer?: NodeJS.Timeout;
  private lastTrim = 0;
  private ticking = false;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repo: RequestOutcomesRepository,
    private readonly replica: ReplicaIdentity,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.tick(), TICK_MS);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.storeAnswers();
    await this.tick();
  }

  /** How long the lease of a running claim lasts without renewal (three ticks, so one slow round trip is harmless). */
  private get leaseMs(): number {
    return 3 * TICK_MS + 1_000;
  }

  /**
   * Claims the key for a write about to run, or finds the earlier attempt's outcome (waiting while it runs).
   * Throws 503 when the earlier attempt is still running after IDEMPOTENCY_WAIT_MS, and 409 when it was cut off.
   */
  async begin(scope: OutcomeScope, route: string, bodyDigest: string | null, windowMs: number): Promise<Begun> {
    const deadline = Date.now() + this.config.idempotency.waitMs;
    let pause = 50;
    for (;;) {
      const r = await this.repo.claim(scope, { route, bodyDigest, owner: this.replica.id, leaseMs: this.leaseMs, windowMs });
      if ('claimed' in r) {
        this.running.add(r.claimed);
        return { claim: { id: r.claimed } };
      }
      const row = r.existing;
      if (row.state === 'done') return { done: row };
      if (row.route !== route || (bodyDigest !== null && row.bodyDigest !== null && row.bodyDigest !== bodyDigest)) {
        throw Errors.idempotencyMismatch('this key was used for a different request (another route or body); use a new key');
      }
      if (row.lapsed) {
        throw Errors.conflict(
          'an earlier attempt of this request was cut off (its replica stopped) and its outcome is unknown: check the ' +
            'table before sending it again with a new request id or Idempotency-Key',
        );
      }
      if (Date.now() + pause > deadline) throw Errors.slowDown('an earlier attempt of this request is still running; retry later');
      await sleep(pause);
      pause = Math.min(pause * 2, 500);
    }
  }

  /**
   * The values of a claim for a write's own first statement to carry (src/modules/idempotency/carried-claim.ts),
   * instead of `begin`'s statement. The statement's claim is then `adopt`ed; a key found held is `begin`'s again.
   */
  claimValues(scope: OutcomeScope, route: string, bodyDigest: string | null, windowMs: number): ClaimValues {
    return { id: randomUUID(), ...scope, route, bodyDigest, owner: this.replica.id, leaseMs: this.leaseMs, windowMs };
  }

  /** A claim made by a write's own statement (claimValues): its lease is renewed from now on. */
  adopt(id: string): Begun {
    this.running.add(id);
    return { claim: { id } };
  }

  /**
   * Stores the answer of a claimed write, with those of the writes that end within ANSWER_DELAY_MS of it (in the
   * background when the catalog is unreachable); never throws.
   */
  finish(claim: Claim, a: StoredAnswer): void {
    this.answers.set(claim.id, { id: claim.id, ...a });
    if (this.answers.size >= ANSWER_BATCH) void this.storeAnswers();
    else this.answerTimer ??= setTimeout(() => void this.storeAnswers(), ANSWER_DELAY_MS);
  }

  /**
   * The oldest answer waiting for its statement, taken for a keyed write's first statement to store (carried-claim.ts):
   * under load the next write's statement stores it, and it costs no transaction of its own. `settle` says whether it
   * was stored; if not (the statement failed, or it was the answer of the key that statement claimed), it waits for
   * its own statement again.
   */
  carryAnswer(): { answer: CarriedAnswer; settle(stored: boolean): void } | undefined {
    const first = this.answers.values().next();
    if (first.done) return undefined;
    const answer = first.value;
    this.answers.delete(answer.id);
    if (!this.answers.size) {
      clearTimeout(this.answerTimer);
      this.answerTimer = undefined;
    }
    return {
      answer,
      settle: (stored) => {
        if (stored) this.running.delete(answer.id);
        else this.finish(answer, answer);
      },
    };
  }

  /** Writes the gathered answers in one statement; those it could not write are owed (retried every tick). */
  private async storeAnswers(): Promise<void> {
    clearTimeout(this.answerTimer);
    this.answerTimer = undefined;
    if (!this.answers.size) return;
    const batch = [...this.answers.values()];
    this.answers.clear();
    const attempt = async () => {
      await this.repo.complete(this.replica.id, batch);
      for (const a of batch) {
        this.owed.delete(a.id);
        this.running.delete(a.id);
      }
    };
    await attempt().catch((err: unknown) => {
      this.log.warn(
        `could not store the outcome of ${batch.length} request claim(s) (retrying in the background): ${(err as Error).message}`,
      );
      for (const a of batch) this.owed.set(a.id, attempt);
    });
  }

  /** Withdraws the claim of a write that failed (nothing happened, so a retry may run it); never throws. */
  abandon(claim: Claim): void {
    this.settle(claim, () => this.repo.release(claim.id, this.replica.id));
  }

  private settle(claim: Claim, write: () => Promise<void>): void {
    const attempt = async () => {
      await write();
      this.owed.delete(claim.id);
      this.running.delete(claim.id);
    };
    attempt().catch((err: unknown) => {
      this.log.warn(`could not store the outcome of request claim ${claim.id} (retrying in the background): ${(err as Error).message}`);
      this.owed.set(claim.id, attempt);
    });
  }

  /** Renews the leases of this replica's claims, retries what is owed, and trims expired rows now and then. */
  private async tick(): Promise<void> {
    if (this.ticking) return;
    this.ticking = true;
    try {
      for (const attempt of new Set(this.owed.values())) await attempt().catch(() => undefined);
      if (this.running.size) {
        await this.repo.renew([...this.running], this.replica.id, this.leaseMs).catch((err: unknown) => {
          this.log.warn(`could not renew the leases of ${this.running.size} running request claim(s): ${(err as Error).message}`);
        });
      }
      if (Date.now() - this.lastTrim >= TRIM_EVERY_MS) {
        this.lastTrim = Date.now();
        await this.repo.trim(TRIM_BATCH).catch(() => undefined);
      }
    } finally {
      this.ticking = false;
    }
  }
}
