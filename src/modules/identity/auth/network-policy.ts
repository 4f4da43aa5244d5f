import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../../../platform/config/config';
import { Errors } from '../../../platform/http/errors';
import { addressInCidrs, ClientAddressRequest, ClientAddressResolver } from '../../../platform/network/client-address';
import { beforeHostSuffix } from '../../../platform/network/host-name';
import type { NetworkRules } from '../tenancy/tenant-context';
import { refused, RefusalContext } from './refusal';

/** What a refused request is told: the same words whatever rule refused it, and whether the database exists or not. */
export const NETWORK_REFUSAL = 'this database cannot be reached from this network or endpoint';

/** A request as Fastify hands it to a guard: its headers and its raw socket. */
export interface NetworkRequest {
  headers: Record<string, string | string[] | undefined>;
  raw?: { socket?: { remoteAddress?: string } | null };
  socket?: { remoteAddress?: string } | null;
}

/**
 * A database's network rules (docs/access-control.md, "Network rules"), checked by CatalogAccessGuard and
 * DatabaseAdminGuard once the credential and its database are known, with the rules that came with their cached
 * lookup (no query of its own). The operator key is not subject to them.
 */
@Injectable()
export class NetworkPolicy {
  private readonly clients: ClientAddressResolver;
  private readonly privateSuffixes: string[];

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.clients = new ClientAddressResolver(config.network.trustedProxies, config.network.forwardedHeader);
    this.privateSuffixes = config.network.privateHostSuffixes;
  }

  /** 403 (PermissionDenied) unless the request satisfies `rules`; the answer names no rule, the audit record does. */
  enforce(req: NetworkRequest, rules: NetworkRules | undefined, who: RefusalContext): void {
    if (!rules) return;
    const broken = this.brokenRule(req, rules);
    if (broken) throw refused(Errors.permissionDenied(NETWORK_REFUSAL), who, broken);
  }

  allows(req: NetworkRequest, rules: NetworkRules): boolean {
    return this.brokenRule(req, rules) === null;
  }

  /** Which rule the request breaks, in words for the audit trail; null when it breaks none. */
  private brokenRule(req: NetworkRequest, rules: NetworkRules): string | null {
    if (rules.privateOnly && !this.underPrivateSuffix(req.headers.host)) return 'private only: not reached through a private endpoint';
    if (rules.allowedCidrs.length === 0) return null;
    const address = this.clients.of({ headers: req.headers, socket: req.raw?.socket ?? req.socket } as ClientAddressRequest);
    return addressInCidrs(address, rules.allowedCidrs) ? null : `source address ${address ?? '(unknown)'} outside the allowed CIDRs`;
  }

  /** Whether the Host header is `<something><suffix>` for one of PRIVATE_HOST_SUFFIXES (none set: never). */
  private underPrivateSuffix(host: string | string[] | undefined): boolean {
    return this.privateSuffixes.some((s) => beforeHostSuffix(host, s) !== undefined);
  }
}
