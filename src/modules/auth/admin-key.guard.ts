import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../../config/config';
import { Errors } from '../../common/errors';
import { headerValue } from '../tenancy/tenancy.service';
import { TenantRequest } from '../tenancy/tenant-context';
import { secretsEqual } from './api-keys.service';
import { API_KEY_HEADER } from './catalog-access.guard';

/** The operator API: the ADMIN_API_KEY value sent as x-api-key. Disabled (403) when ADMIN_API_KEY is unset. */
@Injectable()
export class AdminKeyGuard implements CanActivate {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  canActivate(ctx: ExecutionContext): boolean {
    const req = ctx.switchToHttp().getRequest<TenantRequest>();
    if (!this.config.adminApiKey) {
      throw Errors.permissionDenied('the operator API is disabled: set ADMIN_API_KEY to enable it');
    }
    const secret = headerValue(req.headers, API_KEY_HEADER);
    if (!secret) throw Errors.unauthenticated(`missing credential: send the operator key as '${API_KEY_HEADER}'`);
    if (!secretsEqual(secret, this.config.adminApiKey)) throw Errors.unauthenticated('invalid operator key');
    return true;
  }
}
