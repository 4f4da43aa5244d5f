import { ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../../../platform/config/config';
import { AuthGuard } from '@nestjs/passport';
import { Errors } from '../../../platform/http/errors';
import { headerValue } from '../tenancy/tenancy.service';
import { networkRulesOf, quotasOf, rateLimitOf } from '../tenancy/tenant-context';
import { timingSafeEqual } from 'node:crypto';
import { ApiKeysService, sha256 } from './api-keys.service';
import { Access } from './grants';
import { JwtVerifier } from './jwt-verifier.service';
import { KeyUsage } from './key-usage.service';
import { Principal } from './principal';

export const API_KEY_HEADER = 'x-api-key';

interface CredentialRequest {
  headers: Record<string, string | string[] | undefined>;
  body?: unknown;
  user?: unknown;
}

/** passport's guard for the 'bearer' strategy, used as a building block (not as a route guard). */
const PassportBearer = AuthGuard('bearer');

const OPERATOR: Principal = { kind: 'operator', access: Access.of('admin') };

/**
 * Finds and verifies the caller's credential, in this order (docs/rest-contract.md §5): the `x-api-key` header, an
 * `Authorization: Bearer` token (through passport-http-bearer), then the body's `identity.api_key` /
 * `identity.auth_token` when the headers carry none. Anything missing, unknown, expired, revoked, forged or
 * malformed is a 401. The operator key (ADMIN_API_KEY) is an admin of every database (docs/access-control.md).
 */
@Injectable()
export class CredentialsService {
  private readonly bearer = new PassportBearer();
  /** The operator key's digest, made once (every API-key request is compared with it). */
  private readonly operatorDigest: Buffer | undefined;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly keys: ApiKeysService,
    private readonly verifier: JwtVerifier,
    private readonly usage: KeyUsage,
  ) {
    this.operatorDigest = config.adminApiKey ? sha256(config.adminApiKey) : undefined;
  }

  /** Whether `secret` is the operator key (ADMIN_API_KEY), in constant time; false when no operator key is set. */
  isOperatorKey(secret: string | undefined): boolean {
    return !!secret && this.isOperatorDigest(sha256(secret));
  }

  private isOperatorDigest(digest: Buffer): boolean {
    return !!this.operatorDigest && timingSafeEqual(digest, this.operatorDigest);
  }

  async authenticate(ctx: ExecutionContext): Promise<Principal> {
    const req = ctx.switchToHttp().getRequest<CredentialRequest>();
    const apiKey = headerValue(req.headers, API_KEY_HEADER);
    if (apiKey) return this.apiKey(apiKey);

    const authorization = headerValue(req.headers, 'authorization');
    if (authorization) {
      if (!/^bearer\s+\S/i.test(authorization)) {
        throw Errors.unauthenticated('unsupported Authorization scheme: send Bearer <token> or x-api-key');
      }
      await this.bearer.canActivate(ctx);
      return req.user as Principal;
    }

    const identity = (req.body as { identity?: { api_key?: unknown; auth_token?: unknown } } | null | undefined)?.identity;
    if (typeof identity?.api_key === 'string' && identity.api_key !== '') return this.apiKey(identity.api_key);
    if (typeof identity?.auth_token === 'string' && identity.auth_token !== '') return this.verifier.verify(identity.auth_token);

    throw Errors.unauthenticated(
      `missing credential: send '${API_KEY_HEADER}', 'Authorization: Bearer <token>', or identity in the request body`,
    );
  }

  private async apiKey(secret: string): Promise<Principal> {
    // One digest per request: compared with the operator key's, then the key lookup's.
    const digest = sha256(secret);
    if (this.isOperatorDigest(digest)) return OPERATOR;
    const found = await this.keys.authenticate(secret, digest);
    if (!found) throw Errors.unauthenticated('invalid, expired or revoked API key');
    const { row: key, access } = found;
    this.usage.record(key.id);
    return {
      kind: 'key',
      id: key.id,
      access,
      databaseId: key.databaseId,
      databaseName: key.databaseName,
      databaseRateLimit: rateLimitOf(key),
      databaseQuotas: quotasOf(key),
      databaseNetwork: networkRulesOf(key),
      keyRateLimit: rateLimitOf({ rateLimitLimit: key.keyRateLimitLimit, rateLimitWindowMs: key.keyRateLimitWindowMs }),
    };
  }
}
