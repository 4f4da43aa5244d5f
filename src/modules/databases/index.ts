// What the databases feature offers the other features (test/unit/import-graph.test.ts: they import nothing else of it).
export * from './databases.module';
export * from './databases.service';
export * from './drop-policy.module';
export * from './drop-policy.service';
