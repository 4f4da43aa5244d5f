import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { Errors } from '../../common/errors';
import { headerValue, TenancyService } from '../tenancy/tenancy.service';
import { TenantRequest } from '../tenancy/tenant-context';
import { Role } from './api-keys.repository';
import { ApiKeysService } from './api-keys.service';
import { REQUIRED_ROLE, roleSatisfies } from './requires-role.decorator';

export const API_KEY_HEADER = 'x-api-key';

/**
 * Guards every REST-contract route. Order matters and is part of the contract:
 *  1. a credential that identifies a caller (else 401),
 *  2. the database the request addresses (else a 4xx saying which header is expected),
 *  3. that the credential belongs to that database and its role allows the operation (else 403).
 */
@Injectable()
export class CatalogAccessGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly keys: ApiKeysService,
    private readonly tenancy: TenancyService,
  ) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    const req = ctx.switchToHttp().getRequest<TenantRequest>();
    const secret = headerValue(req.headers, API_KEY_HEADER);
    if (!secret) throw Errors.unauthenticated(`missing credential: send an '${API_KEY_HEADER}' header`);
    const key = await this.keys.authenticate(secret);
    if (!key) throw Errors.unauthenticated('invalid, expired or revoked API key');

    const name = this.tenancy.requestedName(req.headers);
    if (name !== key.databaseName) {
      // Only now look the database up: an unknown one is a 404, someone else's a 403.
      const other = await this.tenancy.resolve(name);
      throw Errors.permissionDenied(`this API key is not valid for database '${other.name}'`);
    }
    const database = { id: key.databaseId, name };
    const need =
      this.reflector.getAllAndOverride<Role | undefined>(REQUIRED_ROLE, [ctx.getHandler(), ctx.getClass()]) ?? 'read';
    if (!roleSatisfies(key.role, need)) {
      throw Errors.permissionDenied(`this operation needs a '${need}' key; this key is '${key.role}'`);
    }
    req.tenant = { database, catalog: '', role: key.role, principal: `key:${key.id}` };
    return true;
  }
}
