import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { mergeMap, Observable } from 'rxjs';
import { parseObjectId, resolveDelimiter } from '../../common/ids';
import { TenantContext } from '../tenancy/tenant-context';
import { AuditService } from './audit.service';
import { AUDITED, AuditSpec } from './audit.metadata';

interface AuditedRequest {
  id: string;
  params: Record<string, string>;
  query: Record<string, unknown>;
  body?: unknown;
  tenant?: TenantContext;
  actor?: string;
}

/**
 * After a route marked @Audited succeeds, records who did it to what: on REST-contract routes the tenant's
 * principal and the object id (`$`-joined, prefixed by the catalog when there is one); on operator routes the actor
 * and the database (and key) named in the path.
 */
@Injectable()
export class AuditInterceptor implements NestInterceptor {
  constructor(
    private readonly reflector: Reflector,
    private readonly audit: AuditService,
  ) {}

  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    const spec = this.reflector.get<AuditSpec | undefined>(AUDITED, ctx.getHandler());
    if (!spec) return next.handle();
    const req = ctx.switchToHttp().getRequest<AuditedRequest>();
    return next.handle().pipe(
      mergeMap(async (result) => {
        await this.audit.record({ ...this.subject(req, result), action: spec.action, details: spec.details?.(req.body ?? {}, result), requestId: String(req.id) });
        return result;
      }),
    );
  }

  private subject(req: AuditedRequest, result: unknown) {
    if (req.tenant) {
      // `{id}` on the REST contract; the Enterprise routes name a root table as `:name`.
      const id =
        req.params.id !== undefined
          ? parseObjectId(req.params.id, resolveDelimiter(req.query.delimiter)).join('$')
          : (req.params.name ?? '');
      return {
        databaseId: req.tenant.database.id,
        databaseName: req.tenant.database.name,
        actor: req.tenant.principal,
        target: req.tenant.catalog ? `${req.tenant.catalog}:${id}` : id,
      };
    }
    const name = req.params.name ?? (result as { name?: string } | undefined)?.name ?? '';
    return { databaseName: name, actor: req.actor ?? 'operator', target: req.params.id ?? name };
  }
}
