import { ExecutionContext, Inject, Injectable, Logger } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import {
  getOptionsToken,
  getStorageToken,
  ThrottlerGuard,
  ThrottlerLimitDetail,
  ThrottlerModuleOptions,
  ThrottlerRequest,
  ThrottlerStorage,
} from '@nestjs/throttler';
import {
  THROTTLER_BLOCK_DURATION,
  THROTTLER_KEY_GENERATOR,
  THROTTLER_LIMIT,
  THROTTLER_SKIP,
  THROTTLER_TRACKER,
  THROTTLER_TTL,
} from '@nestjs/throttler/dist/throttler.constants';
import { APP_CONFIG, AppConfig } from '../../platform/config/config';
import { ApiError, ErrorCode } from '../../platform/http/errors';
import { TenantContext, TenantRequest } from '../identity';
import { MetricsService } from '../../platform/observability/metrics.service';
import { RedisConnection } from '../../platform/redis/redis.provider';

export const THROTTLER_NAME = 'database';

/** The route metadata keys of @Throttle and @SkipThrottle (each followed by the throttler's name). */
const THROTTLER_METADATA = [
  THROTTLER_SKIP,
  THROTTLER_LIMIT,
  THROTTLER_TTL,
  THROTTLER_BLOCK_DURATION,
  THROTTLER_TRACKER,
  THROTTLER_KEY_GENERATOR,
];

/** The limit that applies to a request's database: its own, or the gateway default. */
export function limitFor(config: AppConfig, ctx: ExecutionContext): { limit: number; windowMs: number } {
  const tenant = ctx.switchToHttp().getRequest<TenantRequest>().tenant;
  return tenant?.database.rateLimit ?? config.rateLimit;
}

/**
 * Per-database rate limiting (@nestjs/throttler), placed after CatalogAccessGuard on the REST-contract routes so
 * that it counts authenticated requests only (nobody can spend another tenant's budget by naming its database).
 * Counters are per database across all routes and, with REDIS_URL, shared by every replica (one Lua round trip).
 * A key with its own rate_limit also has its own counter, inside the database's: a request counts against both.
 * Over the limit: 503 "Slow down" (code 21, Throttling) with Retry-After, before the handler runs, so a throttled
 * write is never applied. Redis unreachable: served unthrottled (fail-open, logged and counted) unless
 * RATE_LIMIT_FAIL_CLOSED=true, then 503.
 */
@Injectable()
export class DatabaseThrottlerGuard extends ThrottlerGuard {
  private readonly log = new Logger('Throttling');
  /** Per route handler: whether it carries no throttler metadata (see canActivate). */
  private readonly plainRoutes = new WeakMap<object, boolean>();
  private readonly tracker = (req: Record<string, unknown>) => this.getTracker(req);
  private readonly keyOf = (ctx: ExecutionContext, tracker: string, name: string) => this.generateKey(ctx, tracker, name);

  constructor(
    @Inject(getOptionsToken()) options: ThrottlerModuleOptions,
    @Inject(getStorageToken()) storage: ThrottlerStorage,
    reflector: Reflector,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly redis: RedisConnection,
    private readonly metrics: MetricsService,
  ) {
    super(options, storage, reflector);
  }

  /**
   * One counter per database and limit, shared by every route (the default key would count per handler). The limit
   * is part of the key so that a changed limit starts a fresh counter at once instead of waiting out a block made
   * under the old one.
   */
  protected override async getTracker(req: Record<string, unknown>): Promise<string> {
    const tenant = (req as { tenant?: TenantContext }).tenant;
    if (!tenant) throw new Error('DatabaseThrottlerGuard must run after CatalogAccessGuard');
    const { limit, windowMs } = tenant.database.rateLimit ?? this.config.rateLimit;
    return `${tenant.database.id}:${limit}/${windowMs}`;
  }

  /**
   * The library's check, shortened for what this gateway configures: one throttler, whose limit is the request's
   * database's. The library reads five route metadata keys and awaits three option resolvers per request, the costliest
   * step of a catalog read's guards; this asks the database's limit once. A route that does carry throttler metadata
   * (@Throttle, @SkipThrottle; none does today) is checked by the library's own loop, so such a decorator keeps
   * working.
   */
  override async canActivate(ctx: ExecutionContext): Promise<boolean> {
    // The operator key is not its tenants' traffic: it is never throttled by a database's limit (as on the operator
    // API), so an operator can look into a database that is being throttled.
    if (ctx.switchToHttp().getRequest<TenantRequest>().tenant?.principal === 'operator') return true;
    const handler = ctx.getHandler();
    let plain = this.plainRoutes.get(handler);
    if (plain === undefined) {
      plain = !THROTTLER_METADATA.some(
        (key) => this.reflector.getAllAndOverride(`${key}${THROTTLER_NAME}`, [handler, ctx.getClass()]) !== undefined,
      );
      this.plainRoutes.set(handler, plain);
    }
    const throttler = this.throttlers.length === 1 ? this.throttlers[0] : undefined;
    // A key with its own limit is counted in its own bucket first (a request its key may not make spends none of the
    // database's budget), then in the database's: either exhausted is a 503.
    const key = ctx.switchToHttp().getRequest<TenantRequest>().tenant?.key;
    let keyHeaders: RateHeaders | undefined;
    if (key && throttler) {
      const keyTracker = `key:${key.id}:${key.rateLimit.limit}/${key.rateLimit.windowMs}`;
      await this.handleRequest({
        context: ctx,
        limit: key.rateLimit.limit,
        ttl: key.rateLimit.windowMs,
        blockDuration: key.rateLimit.windowMs,
        throttler,
        getTracker: () => keyTracker,
        generateKey: this.keyOf,
      });
      keyHeaders = rateHeaders(ctx);
    }
    if (!plain || !throttler) return super.canActivate(ctx);
    const { limit, windowMs } = limitFor(this.config, ctx);
    const allowed = await this.handleRequest({
      context: ctx,
      limit,
      ttl: windowMs,
      blockDuration: windowMs,
      throttler,
      getTracker: this.tracker,
      generateKey: this.keyOf,
    });
    // The X-RateLimit-* headers describe whichever limit is nearer: the key's, when it has fewer requests left.
    if (keyHeaders && keyHeaders.remaining < (rateHeaders(ctx)?.remaining ?? Infinity)) keyHeaders.restore();
    return allowed;
  }

  protected override generateKey(_ctx: ExecutionContext, tracker: string, name: string): string {
    return `lgw:rl:${name}:${tracker}`;
  }

  protected override async handleRequest(props: ThrottlerRequest): Promise<boolean> {
    try {
      return await super.handleRequest(props);
    } catch (err) {
      if (err instanceof ApiError) throw err;
      // The counter store failed (Redis down, timed out): never hang, never 500.
      if (this.config.rateLimitFailClosed) {
        throw new ApiError(503, ErrorCode.ServiceUnavailable, 'rate limiting is unavailable, retry later', { 'Retry-After': '1' });
      }
      this.redis.failOpenCount++;
      this.metrics.rateLimitFailOpen.inc();
      this.log.warn(`rate-limit store unavailable, request served unthrottled: ${(err as Error).message}`);
      return true;
    }
  }

  protected override async throwThrottlingException(ctx: ExecutionContext, detail: ThrottlerLimitDetail): Promise<void> {
    const req = ctx.switchToHttp().getRequest<TenantRequest>();
    const tenant = req.tenant;
    // The usage meter counts the answer as throttled (not as failed, which other 503s are).
    req.throttled = true;
    const retryAfter = String(Math.max(1, detail.timeToBlockExpire));
    this.metrics.throttled.inc({ database: tenant?.database.name ?? '' });
    const who = detail.tracker.startsWith('key:') ? `API key '${tenant?.key?.id}'` : `database '${tenant?.database.name}'`;
    throw new ApiError(503, ErrorCode.Throttling, `Slow down: ${who} is limited to ${detail.limit} requests per ${detail.ttl} ms`, {
      'Retry-After': retryAfter,
    });
  }
}

interface RateHeaders {
  remaining: number;
  restore(): void;
}

const RATE_HEADERS = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'].map(
  (h) => `${h}-${THROTTLER_NAME}`, // the library suffixes the headers of a named throttler
);

/** The rate-limit headers the library has set on the reply so far, and a way to set them back. */
function rateHeaders(ctx: ExecutionContext): RateHeaders | undefined {
  const reply = ctx.switchToHttp().getResponse<{ getHeader(n: string): unknown; header(n: string, v: unknown): unknown }>();
  const values = RATE_HEADERS.map((h) => reply.getHeader(h));
  if (values[1] === undefined) return undefined;
  return {
    remaining: Number(values[1]),
    restore: () => RATE_HEADERS.forEach((h, i) => reply.header(h, values[i])),
  };
}
