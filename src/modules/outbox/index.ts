// What the outbox offers the other features (test/unit/import-graph.test.ts: they import nothing else of it).
export * from './event-catalogue';
export * from './outbox.module';
export * from './outbox.repository';
