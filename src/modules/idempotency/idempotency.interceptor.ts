import { CallHandler, ExecutionContext, Inject, Injectable, NestInterceptor } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { catchError, from, map, mergeMap, Observable } from 'rxjs';
import { APP_CONFIG, AppConfig } from '../../platform/config/config';
import { bodyDigestOf, jsonDigest, setCommitGate, watchBodyDigest } from '../../platform/http/body-digest';
import { Errors } from '../../platform/http/errors';
import { AuditService } from '../audit';
import type { TenantContext } from '../identity';
import { Carried, CarriedClaim, CarriedOutcome, setCarriedClaim } from './carried-claim';
import { Begun, Claim, IdempotencyService } from './idempotency.service';
import type { OutcomeRow, OutcomeScope } from './request-outcomes.repository';

/** What an Idempotency-Key may be: visible ASCII, as the IETF draft's examples and the common APIs use. */
const KEY_RE = /^[\x21-\x7e]{1,255}$/;

type KeyedRequest = FastifyRequest & { tenant?: TenantContext };

/** A body the framework did not parse: an Arrow stream read by the handler itself. */
const streamed = (req: FastifyRequest) => req.body === undefined && /arrow|octet-stream/i.test(String(req.headers['content-type'] ?? ''));

/**
 * Exactly-once writes (docs/idempotency.md) on the catalog routes that change something (the ones @Operation marks
 * with a `write` or `admin` role). A write sent with an `Idempotency-Key`, or with an `x-request-id` of the client's
 * own (the official client repeats it on every retry of one request), claims that key before it runs; its answer is
 * stored, and a retry is answered with it — the same status and body, no second effect. A failed write withdraws its
 * claim, so its retry runs afresh. Writes without a key pass straight through.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly idempotency: IdempotencyService,
    private readonly audit: AuditService,
  ) {}

  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    const req = ctx.switchToHttp().getRequest<KeyedRequest>();
    const reply = ctx.switchToHttp().getResponse<FastifyReply>();
    const keyed = this.keyOf(req);
    if (!keyed || !req.tenant) return next.handle();
    const route = `${req.method} ${req.url}`;
    const scope = { databaseId: req.tenant.database.id, principal: req.tenant.principal, scopeKey: keyed.scopeKey };
    if (streamed(req)) return this.interceptStreamed(req, reply, route, scope, keyed.windowMs, next);
    const digest = jsonDigest(req.body);
    return from(this.idempotency.begin(scope, route, digest, keyed.windowMs)).pipe(
      mergeMap((begun) => {
        if ('done' in begun) return from(this.replay(reply, route, digest, begun.done));
        return next.handle().pipe(
          map((value) => this.finish(begun.claim, reply, digest, value)),
          catchError((err: unknown) => {
            this.idempotency.abandon(begun.claim);
            throw err;
          }),
        );
      }),
    );
  }

  /**
   * A write with a streamed (Arrow) body: its key is claimed by the write's first catalog statement when the write
   * can carry it (an insert or merge_insert claims in the statement that reserves its table, see carried-claim.ts),
   * else on its own as soon as the body starts to arrive; the write waits for the claim only at its commit (the
   * body's `beforeCommit`, src/platform/http/body-digest.ts), so a keyed upload takes no extra round trip, and a keyed
   * insert no extra transaction. By then the body has been read and hashed: a retry of a write that already happened
   * is answered from it.
   */
  private interceptStreamed(
    req: KeyedRequest,
    reply: FastifyReply,
    route: string,
    scope: OutcomeScope,
    windowMs: number,
    next: CallHandler,
  ): Observable<unknown> {
    const digest = watchBodyDigest(req);
    const claim = new DeferredClaim(this.idempotency, scope, route, windowMs);
    setCarriedClaim(req, claim);
    setCommitGate(req, async () => {
      const b = await claim.begun();
      if ('done' in b) throw new AnsweredBefore(b.done);
    });
    return next.handle().pipe(
      mergeMap(async (value) => {
        const b = await claim.begun().catch(() => undefined);
        if (b && 'claim' in b) return this.finish(b.claim, reply, digest(), value);
        return value; // nothing was committed (the gate was not reached), so there is nothing to keep
      }),
      catchError(async (err: unknown) => {
        if (err instanceof AnsweredBefore) return this.replay(reply, route, digest(), err.row);
        const b = await claim.begun().catch(() => undefined);
        if (b && 'claim' in b) this.idempotency.abandon(b.claim);
        if (!b || !('done' in b)) throw err;
        // Refused before its commit (a retried create finds its table made by the earlier attempt): the earlier
        // answer stands, once the rest of the body shows it is the same request.
        await this.readRest(req);
        return this.replay(reply, route, digest(), b.done);
      }),
    );
  }

  /** Reads what the handler left of a streamed body into its digest (bounded like any streamed body). */
  private async readRest(req: FastifyRequest): Promise<void> {
    const hash = bodyDigestOf(req);
    if (!hash || req.raw.readableEnded) return;
    let n = 0;
    for await (const chunk of req.raw) {
      n += (chunk as Buffer).length;
      if (n > this.config.arrow.streamBodyBytes)
        throw Errors.payloadTooLarge(`request body exceeds the limit of ${this.config.arrow.streamBodyBytes} bytes`);
      hash.update(chunk as Buffer);
    }
  }

  /** Keeps the answer of a write that ran under its claim, and passes it on. */
  private finish(claim: Claim, reply: FastifyReply, bodyDigest: string, value: unknown): unknown {
    const answer = encode(value);
    if (answer === undefined) this.idempotency.abandon(claim);
    else {
      const type = reply.getHeader('content-type');
      this.idempotency.finish(claim, { bodyDigest, status: reply.statusCode, contentType: typeof type === 'string' ? type : null, answer });
    }
    return value;
  }

  /** The request's key: its Idempotency-Key, else the x-request-id the client sent (not one the gateway made up). */
  private keyOf(req: FastifyRequest): { scopeKey: string; windowMs: number } | undefined {
    const given = req.headers['idempotency-key'];
    if (given !== undefined) {
      if (typeof given !== 'string' || !KEY_RE.test(given)) {
        throw Errors.invalidInput('Idempotency-Key must be 1 to 255 visible ASCII characters, sent once');
      }
      return { scopeKey: `k:${given}`, windowMs: this.config.idempotency.keyWindowMs };
    }
    const windowMs = this.config.idempotency.requestIdWindowMs;
    if (windowMs > 0 && req.headers['x-request-id'] === req.id) return { scopeKey: `r:${req.method} ${req.url} ${req.id}`, windowMs };
    return undefined;
  }

  /** Answers a retry with the earlier attempt's answer, once its body is known to be the same. */
  private async replay(reply: FastifyReply, route: string, digest: string, row: OutcomeRow): Promise<unknown> {
    if (row.route !== route || (row.bodyDigest !== null && row.bodyDigest !== digest)) {
      throw Errors.idempotencyMismatch('this key was used for a different request (another route or body); use a new key');
    }
    this.audit.nothingChanged(); // the change was recorded by the attempt that made it
    reply.status(row.status ?? 200).header('idempotent-replayed', 'true');
    if (row.contentType) reply.type(row.contentType);
    return decode(row.answer);
  }
}

/**
 * The claim of a write with a streamed body, made once: by the write's first catalog statement when the write
 * carries it (`carry`, then `settle` with the statement's outcome; a key found held goes to IdempotencyService.begin,
 * which waits for the earlier attempt or finds its answer), else on its own (`start` when the body starts to arrive,
 * or `begun` when the write reaches its commit gate or ends without having claimed).
 */
class DeferredClaim implements CarriedClaim {
  private outcome?: Promise<Begun>;
  private settleCarried?: (outcome: CarriedOutcome | Error) => void;

  constructor(
    private readonly idempotency: IdempotencyService,
    private readonly scope: OutcomeScope,
    private readonly route: string,
    private readonly windowMs: number,
  ) {}

  carry(): Carried | undefined {
    if (this.outcome) return undefined;
    // An answer of an earlier write waiting for its statement goes in this one.
    const answer = this.idempotency.carryAnswer();
    this.outcome = new Promise<Begun>((resolve, reject) => {
      this.settleCarried = (o) => {
        answer?.settle(!(o instanceof Error) && o.stored);
        if (o instanceof Error) reject(o);
        else if (o.claimed === null) resolve(this.alone());
        else resolve(this.idempotency.adopt(o.claimed));
      };
    });
    this.outcome.catch(() => undefined); // its failure is the write's (the statement's error)
    return { claim: this.idempotency.claimValues(this.scope, this.route, null, this.windowMs), answer: answer?.answer };
  }

  settle(outcome: CarriedOutcome | Error): void {
    const settle = this.settleCarried;
    this.settleCarried = undefined;
    settle?.(outcome);
  }

  start(): void {
    void this.begun();
  }

  /** The claim, or the earlier attempt's outcome; begun on its own now if nobody began it. */
  begun(): Promise<Begun> {
    if (!this.outcome) {
      this.outcome = this.alone();
      this.outcome.catch(() => undefined); // its failure is the write's, at the gate (or none, when it commits nothing)
    }
    return this.outcome;
  }

  private alone(): Promise<Begun> {
    return this.idempotency.begin(this.scope, this.route, null, this.windowMs);
  }
}

/** Thrown at the commit gate of a streamed write whose earlier attempt was answered: its answer is given instead. */
class AnsweredBefore extends Error {
  constructor(readonly row: OutcomeRow) {
    super('answered before');
  }
}

/** A handler's answer as stored: JSON of `{v}`; undefined for what cannot be stored (a stream or bytes). */
function encode(value: unknown): string | undefined {
  if (value === undefined || value === null) return JSON.stringify({});
  if (Buffer.isBuffer(value) || value instanceof Uint8Array || typeof (value as { pipe?: unknown }).pipe === 'function') return undefined;
  return JSON.stringify({ v: value });
}

function decode(answer: string | null): unknown {
  if (!answer) return undefined;
  return (JSON.parse(answer) as { v?: unknown }).v;
}
