import { Inject, Injectable } from '@nestjs/common';
import { createRemoteJWKSet, errors as joseErrors, JWTPayload, jwtVerify } from 'jose';
import { APP_CONFIG, AppConfig } from '../../../platform/config/config';
import { ApiError, Errors } from '../../../platform/http/errors';
import type { Role } from './api-keys.repository';
import type { Principal } from './principal';
import { Access, GrantsSchema } from './grants';

/** Asymmetric algorithms only: a JWKS never holds shared secrets, and 'none' is never acceptable. */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];

/**
 * Verifies OAuth 2.0 access tokens (JWT) issued by an external authorization server: signature against the keys
 * at OAUTH_JWKS_URI (fetched lazily, cached, fetched again when a token names an unknown `kid`, at most once per
 * OAUTH_JWKS_COOLDOWN_MS), `iss`, `aud`, `exp` (required) and `nbf` with OAUTH_CLOCK_SKEW_S of tolerance.
 * The databases a token may use come from the configured claim; its role from the space-separated `scope`.
 */
@Injectable()
export class JwtVerifier {
  private readonly jwks?: ReturnType<typeof createRemoteJWKSet>;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    if (config.oauth) {
      this.jwks = createRemoteJWKSet(new URL(config.oauth.jwksUri), {
        cooldownDuration: config.oauth.jwksCooldownMs,
        timeoutDuration: 5000,
      });
    }
  }

  get enabled(): boolean {
    return this.jwks !== undefined;
  }

  async verify(token: string): Promise<Extract<Principal, { kind: 'token' }>> {
    const oauth = this.config.oauth;
    if (!this.jwks || !oauth) {
      throw Errors.unauthenticated('bearer tokens are not accepted here (the gateway has no OAUTH_JWKS_URI)');
    }
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.jwks, {
        issuer: oauth.issuer,
        audience: oauth.audience,
        clockTolerance: oauth.clockSkewS,
        requiredClaims: ['exp'],
        algorithms: ALGORITHMS,
      }));
    } catch (err) {
      throw this.explain(err);
    }
    return {
      kind: 'token',
      subject: typeof payload.sub === 'string' && payload.sub !== '' ? payload.sub : '(no subject)',
      access: accessFrom(roleFromScope(payload.scope), payload[oauth.grantsClaim]),
      databases: databasesFrom(payload[oauth.databasesClaim]),
    };
  }

  /** A precise 401 for the caller (never echoing the token), or 503 when the key set cannot be fetched. */
  private explain(err: unknown): ApiError {
    if (err instanceof joseErrors.JWTExpired) return Errors.unauthenticated('token expired');
    if (err instanceof joseErrors.JWTClaimValidationFailed) {
      return Errors.unauthenticated(`token claim '${err.claim}' is not acceptable (${err.reason})`);
    }
    if (err instanceof joseErrors.JWSSignatureVerificationFailed) return Errors.unauthenticated('token signature is invalid');
    if (err instanceof joseErrors.JWKSNoMatchingKey) return Errors.unauthenticated('token is signed by an unknown key');
    if (err instanceof joseErrors.JOSEAlgNotAllowed) return Errors.unauthenticated('token algorithm is not allowed');
    if (err instanceof joseErrors.JWKSTimeout || err instanceof joseErrors.JWKSInvalid) {
      return Errors.serviceUnavailable('the authorization server keys cannot be fetched right now');
    }
    if (err instanceof joseErrors.JOSEError) return Errors.unauthenticated('malformed token');
    // A network failure while fetching the key set.
    if (err instanceof TypeError || /fetch|ECONNREFUSED|ENOTFOUND/i.test(String((err as Error)?.message))) {
      return Errors.serviceUnavailable('the authorization server keys cannot be fetched right now');
    }
    return Errors.unauthenticated('malformed token');
  }
}

export function roleFromScope(scope: unknown): Role | null {
  const scopes = new Set(typeof scope === 'string' ? scope.split(/\s+/) : Array.isArray(scope) ? scope.map(String) : []);
  if (scopes.has('admin')) return 'admin';
  if (scopes.has('write')) return 'write';
  if (scopes.has('read')) return 'read';
  return null;
}

/**
 * The token's access: its scope's role, narrowed by the grants claim when there is one (privileges above the role
 * are not held). A grants claim that is not a valid list of grants refuses the token: guessing would widen it.
 */
export function accessFrom(role: Role | null, claim: unknown): Access | null {
  if (claim === undefined) return role ? Access.of(role) : null;
  const grants = GrantsSchema.safeParse(claim);
  if (!grants.success) throw Errors.unauthenticated('token grants claim is malformed');
  return role ? Access.of(role, grants.data) : null;
}

export function databasesFrom(claim: unknown): '*' | string[] {
  const list = typeof claim === 'string' ? [claim] : Array.isArray(claim) ? claim.filter((v): v is string => typeof v === 'string') : [];
  return list.includes('*') ? '*' : list;
}
