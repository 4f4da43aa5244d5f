import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Errors } from '../../../platform/http/errors';
import { assertName } from '../../../platform/http/ids';
import { requiredRole } from '../../../platform/http/operation.decorator';
import { TenancyService } from '../tenancy/tenancy.service';
import { TenantRequest } from '../tenancy/tenant-context';
import { CredentialsService } from './credentials.service';
import { NetworkPolicy, NetworkRequest } from './network-policy';
import { mayUseDatabase, principalLabel } from './principal';
import { roleSatisfies } from './roles';

export { API_KEY_HEADER } from './credentials.service';

/**
 * Guards every REST-contract route. Order matters and is part of the contract:
 *  1. a verified credential (else 401),
 *  2. the database the request addresses (else 400 saying what is expected),
 *  3. that the credential may use that database (else 403, before the name is looked up: no enumeration), that it
 *     exists (else 404, only for credentials that may use it), that the request meets the database's network rules
 *     (else 403, the same words for any rule) and that the role allows the operation (else 403).
 * An API key's network rules are its database's and come with its lookup: they are checked before the name it
 * addresses, so a refused request says the same whether that name exists or not.
 */
@Injectable()
export class CatalogAccessGuard implements CanActivate {
  constructor(
    private readonly credentials: CredentialsService,
    private readonly tenancy: TenancyService,
    private readonly network: NetworkPolicy,
  ) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    const req = ctx.switchToHttp().getRequest<TenantRequest>();
    const principal = await this.credentials.authenticate(ctx);
    if (principal.kind === 'key') this.network.enforce(req as NetworkRequest, principal.databaseNetwork);
    const { name, catalog } = this.tenancy.requested(req.headers);
    assertName(name, 'database name');

    // Whether the credential may use the named database is decided before looking the name up: a credential of
    // another database gets the same 403 whether that name exists or not, so names cannot be probed. An API key
    // carries its own database, so addressing it needs no lookup; a token whose databases claim names it (or is
    // '*') has it resolved, and only such a token learns that it does not exist (404).
    if (!mayUseDatabase(principal, name)) {
      throw Errors.permissionDenied(`this credential is not valid for database '${name}'`);
    }
    const database =
      principal.kind === 'key'
        ? {
            id: principal.databaseId,
            name,
            rateLimit: principal.databaseRateLimit,
            quotas: principal.databaseQuotas,
            network: principal.databaseNetwork,
          }
        : await this.tenancy.resolve(name);
    if (principal.kind === 'token') this.network.enforce(req as NetworkRequest, database.network);
    const need = requiredRole(ctx.getHandler());
    if (!principal.role) throw Errors.permissionDenied("this token's scope grants none of read, write or admin");
    if (!roleSatisfies(principal.role, need)) {
      throw Errors.permissionDenied(`this operation needs '${need}'; this credential has '${principal.role}'`);
    }
    req.tenant = { database, catalog, role: principal.role, need, principal: principalLabel(principal), requestId: req.id };
    if (principal.kind === 'key' && principal.keyRateLimit) req.tenant.key = { id: principal.id, rateLimit: principal.keyRateLimit };
    return true;
  }
}
