// What the idempotency feature offers the other features (test/unit/import-graph.test.ts: they import nothing else of it).
export * from './carried-claim';
