import { createHash, timingSafeEqual } from 'node:crypto';
import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config/config';
import { Errors } from '../http/errors';

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/**
 * GET /metrics with METRICS_API_KEY set: the scraper sends the key as `Authorization: Bearer <key>` (what
 * Prometheus' `authorization` / `bearer_token` settings send) or as `x-api-key`; anything else is a 401 with the
 * problem body. Without METRICS_API_KEY the route stays open (for a scraper on a private network).
 */
@Injectable()
export class MetricsKeyGuard implements CanActivate {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  canActivate(ctx: ExecutionContext): boolean {
    const expected = this.config.metrics.apiKey;
    if (!expected) return true;
    const headers = ctx.switchToHttp().getRequest<{ headers: Record<string, string | string[] | undefined> }>().headers;
    const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v)?.trim();
    const bearer = /^bearer\s+(\S+)$/i.exec(first(headers.authorization) ?? '')?.[1];
    const given = [bearer, first(headers['x-api-key'])].filter((v): v is string => !!v);
    // Compared as digests in constant time, like the operator key: the answer's timing says nothing about the key.
    if (given.some((g) => timingSafeEqual(digest(g), digest(expected)))) return true;
    throw Errors.unauthenticated(
      given.length ? 'invalid metrics key' : "missing metrics key: send 'Authorization: Bearer <METRICS_API_KEY>' or 'x-api-key'",
    );
  }
}
