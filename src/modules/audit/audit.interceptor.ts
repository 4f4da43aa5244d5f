import { CallHandler, ExecutionContext, Injectable, Logger, NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { mergeMap, Observable } from 'rxjs';
import { parseObjectId, resolveDelimiter } from '../../platform/http/ids';
import { TenantContext } from '../identity';
import { AuditContext, AuditEntry, pendingAudit } from './audit-context';
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
 * Runs a route marked @Audited with the record it owes in AuditContext: on REST-contract routes the tenant's
 * principal and the object id (`$`-joined, prefixed by the catalog when there is one); on operator routes the actor
 * and the database (and key) named in the path or body. The route's service writes the record with the change it
 * describes (AuditService.inTransaction / beforeCommit). Should a service have recorded nothing and not said that
 * nothing changed, the record is written here after the fact, and a failure to write it fails the request: a
 * change is never left unrecorded without anyone being told.
 */
@Injectable()
export class AuditInterceptor implements NestInterceptor {
  private readonly log = new Logger('Audit');

  constructor(
    private readonly reflector: Reflector,
    private readonly audit: AuditService,
  ) {}

  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    const spec = this.reflector.get<AuditSpec | undefined>(AUDITED, ctx.getHandler());
    if (!spec) return next.handle();
    const req = ctx.switchToHttp().getRequest<AuditedRequest>();
    const body = req.body && typeof req.body === 'object' ? req.body : {};
    const pending = pendingAudit({
      ...this.subject(req, body),
      action: spec.action,
      details: spec.details?.(body),
      requestId: String(req.id),
    });
    return AuditContext.observe(pending, () =>
      next.handle().pipe(
        mergeMap(async (result) => {
          if (pending.state === 'pending') {
            this.log.warn(`${spec.action} was recorded after its change, not with it (its service wrote no audit record)`);
            await this.audit.recordAfter(pending);
          }
          return result;
        }),
      ),
    );
  }

  private subject(req: AuditedRequest, body: object): Omit<AuditEntry, 'action'> {
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
    // Operator routes: the database is in the path, or (when creating one) in the body.
    const bodyName = (body as { name?: unknown }).name;
    const name = req.params.name ?? (typeof bodyName === 'string' ? bodyName : '');
    return { databaseName: name, actor: req.actor ?? 'operator', target: req.params.id ?? name };
  }
}
