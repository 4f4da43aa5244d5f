// What the throttling feature offers the other features (test/unit/import-graph.test.ts: they import nothing else of it).
export * from './throttling.module';
