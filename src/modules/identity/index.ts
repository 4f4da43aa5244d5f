// What the identity feature offers the other features (test/unit/import-graph.test.ts: they import nothing else of it).
export * from './auth/api-keys.repository';
export * from './auth/api-keys.service';
export * from './auth/auth.module';
export * from './auth/grants';
export * from './auth/identity-caches.service';
export { requireOn } from './auth/refusal';
export * from './tenancy/databases.repository';
export * from './tenancy/tenancy.module';
export * from './tenancy/tenancy.service';
export * from './tenancy/tenant-context';
