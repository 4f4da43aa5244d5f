// What the vending feature offers the other features (test/unit/import-graph.test.ts: they import nothing else of it).
export * from './credential-vendor.service';
export * from './vending.module';
