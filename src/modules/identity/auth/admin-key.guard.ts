import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../../../platform/config/config';
import { Errors } from '../../../platform/http/errors';
import { headerValue } from '../tenancy/tenancy.service';
import { API_KEY_HEADER, CredentialsService } from './credentials.service';
import { NetworkPolicy, NetworkRequest } from './network-policy';
import { mayUseDatabase, principalLabel } from './principal';
import { refused } from './refusal';
import { TenancyService } from '../tenancy/tenancy.service';

/** Set on operator-API requests: who acts, for the audit trail. */
export interface OperatorRequest {
  headers: Record<string, string | string[] | undefined>;
  params: Record<string, string>;
  actor?: string;
}

/**
 * Routes only the operator may use (databases): the ADMIN_API_KEY value sent as x-api-key. Any other valid
 * credential (even a database admin's) is a 403; an invalid one a 401.
 */
@Injectable()
export class AdminKeyGuard implements CanActivate {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly credentials: CredentialsService,
  ) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    const req = ctx.switchToHttp().getRequest<OperatorRequest>();
    if (!this.config.adminApiKey) {
      throw Errors.permissionDenied('the operator API is disabled: set ADMIN_API_KEY to enable it');
    }
    if (!headerValue(req.headers, API_KEY_HEADER) && !headerValue(req.headers, 'authorization')) {
      throw Errors.unauthenticated(`missing credential: send the operator key as '${API_KEY_HEADER}'`);
    }
    if (!this.credentials.isOperatorKey(headerValue(req.headers, API_KEY_HEADER))) {
      await this.credentials.authenticate(ctx); // 401 unless it is some other valid credential
      throw Errors.permissionDenied('only the operator key manages databases');
    }
    req.actor = 'operator';
    return true;
  }
}

/**
 * Routes about one database (`:name`: its keys, its audit trail): the operator, or a credential with the `admin`
 * role for that very database (an admin API key of it, or a token with scope `admin` whose databases claim names it),
 * from where that database's network rules allow (the operator key is not subject to them).
 */
@Injectable()
export class DatabaseAdminGuard implements CanActivate {
  constructor(
    private readonly credentials: CredentialsService,
    private readonly network: NetworkPolicy,
    private readonly tenancy: TenancyService,
  ) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    const req = ctx.switchToHttp().getRequest<OperatorRequest>();
    if (this.credentials.isOperatorKey(headerValue(req.headers, API_KEY_HEADER))) {
      req.actor = 'operator';
      return true;
    }
    const principal = await this.credentials.authenticate(ctx);
    const actor = principalLabel(principal);
    const operation = ctx.getHandler().name;
    // A key's rules are its database's (known from its lookup): checked first, so a refusal says nothing of the name.
    if (principal.kind === 'key') {
      const who = { actor, operation, databaseId: principal.databaseId, databaseName: principal.databaseName };
      this.network.enforce(req as NetworkRequest, principal.databaseNetwork, who);
    }
    const denied = () =>
      Errors.permissionDenied(`managing database '${req.params.name}' needs the operator key or an admin credential of it`);
    if (!mayUseDatabase(principal, req.params.name)) throw denied();
    const database =
      principal.kind === 'key'
        ? { id: principal.databaseId, network: principal.databaseNetwork }
        : await this.tenancy.resolve(req.params.name);
    const who = { actor, operation, databaseId: database.id, databaseName: req.params.name };
    if (principal.kind === 'token') this.network.enforce(req as NetworkRequest, database.network, who);
    if (!principal.access?.onDatabaseHas('admin')) throw refused(denied(), who, 'needs admin on the database');
    req.actor = principalLabel(principal);
    return true;
  }
}
