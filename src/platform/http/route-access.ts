import { CallHandler, CanActivate, ExecutionContext, Inject, Injectable, NestInterceptor } from '@nestjs/common';
import { firstValueFrom, from, isObservable, mergeMap, Observable } from 'rxjs';

/** Who may call a route (declared by @Operation's `access`). */
export type Access = 'catalog' | 'operator' | 'database-admin' | 'metrics' | 'public';

/** The roles of a database's credentials: `write` implies `read`, `admin` implies both. */
export type Role = 'read' | 'write' | 'admin';

/**
 * What a catalog route needs (ADR 0009, docs/access-control.md): `describe` (describe, list, exists), `select` (query,
 * count, versions, stats), `insert`, `modify` (update, delete, merge-insert), `create` (tables and namespaces),
 * `manage` (drop, rename, alter, indices, tags, branches, restore, maintenance), `admin` (the database's own settings).
 */
export type Privilege = 'describe' | 'select' | 'insert' | 'modify' | 'create' | 'manage' | 'admin';

/**
 * What a catalog route's privilege is checked on: the table or namespace its `{id}` names, the database, `listing`:
 * a listing the service filters to what the credential may see, or `service`: objects the route finds by other
 * means (a job's table), which its service checks. `creates` marks a route that makes its `{id}` object (its
 * namespace must then be visible).
 */
export type Target = 'table' | 'namespace' | 'database' | 'listing' | 'service';

/** The least role that holds a privilege on the whole database: what metering and idempotency go by. */
export const roleOfPrivilege = (p: Privilege): Role => (p === 'describe' || p === 'select' ? 'read' : p === 'admin' ? 'admin' : 'write');

/**
 * What enforces each kind of access, and what wraps a catalog write, in the order they run. The platform only
 * declares the slots; the composition root (src/route-policy.module.ts) fills them with the features' guards and
 * interceptors, so that the route decorator (operation.decorator.ts) depends on no feature (docs/architecture.md).
 */
export interface RoutePolicy {
  guards: Record<Access, CanActivate[]>;
  catalogWrite: NestInterceptor[];
}

export const ROUTE_POLICY = Symbol('ROUTE_POLICY');

/** The access metadata RouteAccessGuard reads (set by @Operation). */
export const ROUTE_ACCESS = 'lgw:route-access';

/** Runs the guards of the route's access, in order; the first refusal (a thrown error or `false`) ends it. */
@Injectable()
export class RouteAccessGuard implements CanActivate {
  constructor(@Inject(ROUTE_POLICY) private readonly policy: RoutePolicy) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    const access = (Reflect.getMetadata(ROUTE_ACCESS, ctx.getHandler()) as Access | undefined) ?? 'public';
    for (const guard of this.policy.guards[access]) {
      const allowed = guard.canActivate(ctx);
      if (!(isObservable(allowed) ? await firstValueFrom(allowed) : await allowed)) return false;
    }
    return true;
  }
}

/** Wraps a catalog write in the policy's interceptors (the first listed is the outermost). */
@Injectable()
export class CatalogWriteInterceptor implements NestInterceptor {
  constructor(@Inject(ROUTE_POLICY) private readonly policy: RoutePolicy) {}

  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    const chain = this.policy.catalogWrite.reduceRight<CallHandler>(
      (inner, interceptor) => ({
        handle: () => from(Promise.resolve(interceptor.intercept(ctx, inner))).pipe(mergeMap((o: Observable<unknown>) => o)),
      }),
      next,
    );
    return chain.handle();
  }
}
