import { CanActivate, Global, Module, Type } from '@nestjs/common';
import { AuthModule } from './modules/identity/auth/auth.module';
import { AdminKeyGuard, DatabaseAdminGuard } from './modules/identity/auth/admin-key.guard';
import { CatalogAccessGuard } from './modules/identity/auth/catalog-access.guard';
import { IdempotencyInterceptor } from './modules/idempotency/idempotency.interceptor';
import { IdempotencyModule } from './modules/idempotency/idempotency.module';
import { DatabaseThrottlerGuard } from './modules/throttling/database-throttler.guard';
import { ThrottlingModule } from './modules/throttling/throttling.module';
import { MetricsKeyGuard } from './platform/observability/metrics-key.guard';
import { Access, CatalogWriteInterceptor, ROUTE_POLICY, RouteAccessGuard, RoutePolicy } from './platform/http/route-access';

/** The guards each kind of access puts on a route, in the order they run. */
export const ACCESS_GUARDS: Record<Access, Type<CanActivate>[]> = {
  /** A credential of the database (else 401/403), then the database's rate limit. */
  catalog: [CatalogAccessGuard, DatabaseThrottlerGuard],
  /** The operator key only. */
  operator: [AdminKeyGuard],
  /** The operator key, or an admin credential of the database named in the path. */
  'database-admin': [DatabaseAdminGuard],
  /** METRICS_API_KEY when it is set; open otherwise. */
  metrics: [MetricsKeyGuard],
  public: [],
};

const GUARDS = [...new Set(Object.values(ACCESS_GUARDS).flat())];

/**
 * Fills the route policy the platform's route decorator declares (src/platform/http/route-access.ts) with the
 * features that enforce it: identity and throttling guard the routes, idempotency wraps catalog writes. Global, so
 * that @Operation's RouteAccessGuard finds it from any controller's module.
 */
@Global()
@Module({
  imports: [AuthModule, ThrottlingModule, IdempotencyModule],
  providers: [
    {
      provide: ROUTE_POLICY,
      inject: [...GUARDS, IdempotencyInterceptor],
      useFactory: (...deps: unknown[]): RoutePolicy => {
        const of = (t: Type<CanActivate>) => deps[GUARDS.indexOf(t)] as CanActivate;
        const guards = Object.fromEntries(Object.entries(ACCESS_GUARDS).map(([access, types]) => [access, types.map(of)]));
        return { guards: guards as RoutePolicy['guards'], catalogWrite: [deps[GUARDS.length] as IdempotencyInterceptor] };
      },
    },
    RouteAccessGuard,
    CatalogWriteInterceptor,
  ],
  exports: [ROUTE_POLICY, RouteAccessGuard, CatalogWriteInterceptor],
})
export class RoutePolicyModule {}
