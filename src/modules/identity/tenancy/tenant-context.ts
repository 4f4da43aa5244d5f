import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { Quotas } from '../../../platform/config/config';
import type { Role } from '../auth/api-keys.repository';
import type { Access } from '../auth/grants';

/** Who is calling and which catalog the request works in; set by CatalogAccessGuard. */
/** A database's own request rate limit; null → the gateway defaults. */
export type RateLimit = { limit: number; windowMs: number } | null;

export const rateLimitOf = (row: { rateLimitLimit: number | null; rateLimitWindowMs: number | null }): RateLimit =>
  row.rateLimitLimit && row.rateLimitWindowMs ? { limit: row.rateLimitLimit, windowMs: row.rateLimitWindowMs } : null;

/** A database's own quotas from its catalog row (null: the gateway's default applies). */
export const quotasOf = (row: {
  maxTables?: number | bigint | string | null;
  maxNamespaces?: number | bigint | string | null;
  maxStorageBytes?: number | bigint | string | null;
  maxRowsPerWrite?: number | bigint | string | null;
}): Quotas => {
  const n = (v: number | bigint | string | null | undefined) => (v === null || v === undefined ? null : Number(v));
  return {
    maxTables: n(row.maxTables),
    maxNamespaces: n(row.maxNamespaces),
    maxStorageBytes: n(row.maxStorageBytes),
    maxRowsPerWrite: n(row.maxRowsPerWrite),
  };
};

/**
 * A database's network rules (docs/access-control.md): the source CIDRs its requests may come from (empty: any) and
 * whether it answers only under PRIVATE_HOST_SUFFIXES.
 */
export interface NetworkRules {
  allowedCidrs: string[];
  privateOnly: boolean;
}

export const networkRulesOf = (row: { allowedCidrs?: string[] | null; privateOnly?: boolean | null }): NetworkRules => ({
  allowedCidrs: row.allowedCidrs ?? [],
  privateOnly: row.privateOnly ?? false,
});

export interface TenantContext {
  /** The database, with what travels with its lookup (rate limit, quotas): no further query per request. */
  database: { id: string; name: string; rateLimit: RateLimit; quotas?: Quotas; network?: NetworkRules };
  /** Database prefix scoping a separate catalog ('' by default). */
  catalog: string;
  role: Role;
  /** What the credential may do where (its role narrowed by its grants): services check second objects and filter listings with it. */
  access: Access;
  /** The least role the route needs: 'read' routes are metered as reads, the others as writes. */
  need?: Role;
  /** The calling API key's own rate limit (inside the database's) and its id; absent for tokens and keys without one. */
  key?: { id: string; rateLimit: { limit: number; windowMs: number } };
  /** Audit identity: the API key id (never its secret). */
  principal: string;
  /** The route's handler, for the audit record of a refusal. */
  operation?: string;
  /** The request's id (x-request-id), kept with the storage work it starts (pending locations). */
  requestId?: string;
}

export interface TenantRequest {
  id?: string;
  tenant?: TenantContext;
  /** Set when the request was refused by its database's or key's rate limit (503 "Slow down"), for usage metering. */
  throttled?: boolean;
  headers: Record<string, string | string[] | undefined>;
}

export const Tenant = createParamDecorator((_: unknown, ctx: ExecutionContext): TenantContext => {
  const req = ctx.switchToHttp().getRequest<TenantRequest>();
  if (!req.tenant) throw new Error('Tenant() used on a route without CatalogAccessGuard');
  return req.tenant;
});

/** One catalog of one database: what every catalog query is confined to. */
export interface Scope {
  databaseId: string;
  catalog: string;
}

export const scopeOf = (t: TenantContext): Scope => ({ databaseId: t.database.id, catalog: t.catalog });
