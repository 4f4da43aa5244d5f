import { createHash } from 'node:crypto';
import { CallHandler, ExecutionContext, Inject, Injectable, NestInterceptor } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { catchError, from, map, mergeMap, Observable } from 'rxjs';
import { APP_CONFIG, AppConfig } from '../../config/config';
import { jsonDigest, watchBodyDigest } from '../../common/body-digest';
import { Errors } from '../../common/errors';
import { AuditService } from '../audit/audit.service';
import type { TenantContext } from '../tenancy/tenant-context';
import { IdempotencyService } from './idempotency.service';
import type { OutcomeRow } from './request-outcomes.repository';

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
    const isStream = streamed(req);
    const digest = isStream ? null : jsonDigest(req.body);
    const scope = { databaseId: req.tenant.database.id, principal: req.tenant.principal, scopeKey: keyed.scopeKey };
    return from(this.idempotency.begin(scope, route, digest, keyed.windowMs)).pipe(
      mergeMap((begun) => {
        if ('done' in begun) return from(this.replay(req, reply, route, isStream, digest, begun.done));
        const { claim } = begun;
        const streamDigest = isStream ? watchBodyDigest(req) : undefined;
        return next.handle().pipe(
          map((value) => {
            const answer = encode(value);
            if (answer === undefined) this.idempotency.abandon(claim);
            else {
              const type = reply.getHeader('content-type');
              this.idempotency.finish(claim, {
                bodyDigest: streamDigest ? streamDigest() : digest,
                status: reply.statusCode,
                contentType: typeof type === 'string' ? type : null,
                answer,
              });
            }
            return value;
          }),
          catchError((err: unknown) => {
            this.idempotency.abandon(claim);
            throw err;
          }),
        );
      }),
    );
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
  private async replay(req: FastifyRequest, reply: FastifyReply, route: string, isStream: boolean, digest: string | null, row: OutcomeRow): Promise<unknown> {
    const sent = isStream ? await this.drain(req) : digest;
    if (row.route !== route || (row.bodyDigest !== null && row.bodyDigest !== sent)) {
      throw Errors.idempotencyMismatch('this key was used for a different request (another route or body); use a new key');
    }
    this.audit.nothingChanged(); // the change was recorded by the attempt that made it
    reply.status(row.status ?? 200).header('idempotent-replayed', 'true');
    if (row.contentType) reply.type(row.contentType);
    return decode(row.answer);
  }

  /** Reads a retried Arrow body to its end (it is not written again), for its digest. */
  private async drain(req: FastifyRequest): Promise<string> {
    const hash = createHash('sha256');
    let n = 0;
    for await (const chunk of req.raw) {
      n += (chunk as Buffer).length;
      if (n > this.config.arrow.streamBodyBytes) throw Errors.payloadTooLarge(`request body exceeds the limit of ${this.config.arrow.streamBodyBytes} bytes`);
      hash.update(chunk as Buffer);
    }
    return hash.digest('hex');
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
