import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Errors } from '../../../platform/http/errors';
import { REFUSAL } from '../../../platform/http/http-exception.filter';
import { assertName, parseObjectId, resolveDelimiter } from '../../../platform/http/ids';
import { catalogNeedOf, CatalogNeed, requiredRole } from '../../../platform/http/operation.decorator';
import { roleOfPrivilege } from '../../../platform/http/route-access';
import { TenancyService } from '../tenancy/tenancy.service';
import { TenantRequest } from '../tenancy/tenant-context';
import { CredentialsService } from './credentials.service';
import { Access } from './grants';
import { NetworkPolicy, NetworkRequest } from './network-policy';
import { mayUseDatabase, principalLabel } from './principal';
import { refused, RefusalContext } from './refusal';

export { API_KEY_HEADER } from './credentials.service';

type GuardedRequest = TenantRequest & { params?: Record<string, string>; query?: Record<string, unknown> };

/**
 * Guards every REST-contract route. Order matters and is part of the contract:
 *  1. a verified credential (else 401),
 *  2. the database the request addresses (else 400 saying what is expected),
 *  3. that the credential may use that database (else 403, before the name is looked up: no enumeration), that it
 *     exists (else 404, only for credentials that may use it), that the request meets the database's network rules
 *     (else 403, the same words for any rule),
 *  4. that the credential holds the privilege the route needs on what the route touches (docs/access-control.md):
 *     403 for an object it can see, and for one it cannot, exactly the answer for an object that does not exist.
 * An API key's network rules and grants come with its (cached) lookup: no catalog query is added to a request.
 */
@Injectable()
export class CatalogAccessGuard implements CanActivate {
  constructor(
    private readonly credentials: CredentialsService,
    private readonly tenancy: TenancyService,
    private readonly network: NetworkPolicy,
  ) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    const req = ctx.switchToHttp().getRequest<GuardedRequest>();
    const principal = await this.credentials.authenticate(ctx);
    const actor = principalLabel(principal);
    const operation = ctx.getHandler().name;
    if (principal.kind === 'key') {
      this.network.enforce(req as NetworkRequest, principal.databaseNetwork, {
        actor,
        operation,
        databaseId: principal.databaseId,
        databaseName: principal.databaseName,
      });
    }
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
    const who = { actor, operation, databaseId: database.id, databaseName: database.name };
    if (principal.kind === 'token') this.network.enforce(req as NetworkRequest, database.network, who);
    if (!principal.access) throw refused(Errors.permissionDenied("this token's scope grants none of read, write or admin"), who, 'no role');
    const need = catalogNeedOf(ctx.getHandler());
    this.check(principal.access, need, req, who);
    req.tenant = {
      database,
      catalog,
      role: principal.access.role,
      access: principal.access,
      need: requiredRole(ctx.getHandler()),
      principal: actor,
      operation,
      requestId: req.id,
    };
    if (principal.kind === 'key' && principal.keyRateLimit) req.tenant.key = { id: principal.id, rateLimit: principal.keyRateLimit };
    return true;
  }

  /** The route's privilege on what it touches; a listing, or what a route finds by other means, its service checks. */
  private check(access: Access, need: CatalogNeed, req: GuardedRequest, who: RefusalContext): void {
    // A credential without grants sees everything: a refusal can only be its role's.
    const roleRefusal = () =>
      Errors.permissionDenied(
        `this operation needs '${roleOfPrivilege(need.privilege)}' ('${need.privilege}'); this credential has '${access.role}'`,
      );
    if (need.on === 'listing' || need.on === 'service') {
      // Its service checks each object; a credential that holds the privilege nowhere is refused here, as before grants.
      if (access.holdsAnywhere(need.privilege)) return;
      const error = access.unscoped
        ? roleRefusal()
        : Errors.permissionDenied(`this operation needs '${need.privilege}', which this credential's grants do not give`);
      throw refused(error, who, `needs ${need.privilege}`);
    }
    if (need.on === 'database') {
      if (access.onDatabaseHas(need.privilege)) return;
      const error = access.unscoped
        ? roleRefusal()
        : Errors.permissionDenied(`this operation needs '${need.privilege}' on the database, which this credential's grants do not give`);
      throw refused(error, who, `needs ${need.privilege} on the database`);
    }
    // `{id}` (the route's object), or the table name of the Enterprise streaming create (`/v1/tables/{name}`).
    const params = req.params ?? {};
    const path =
      params.id !== undefined ? parseObjectId(params.id, resolveDelimiter(req.query?.delimiter)) : [assertName(params.name, 'table name')];
    if (access.may(need.privilege, need.on, path)) return;
    const error = access.unscoped ? roleRefusal() : access.refusal(need.privilege, need.on, path, need.creates === true);
    refused(error, who, `needs ${need.privilege}`, { kind: need.on, path });
    if (need.hiddenAnswered && !access.visible(need.on, path)) {
      // The service answers as for a missing object; the refusal is recorded all the same.
      (req as GuardedRequest & { [REFUSAL]?: unknown })[REFUSAL] = error.refusal;
      return;
    }
    throw error;
  }
}
