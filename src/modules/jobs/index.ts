// What the jobs feature offers the other features (test/unit/import-graph.test.ts: they import nothing else of it).
export * from './jobs.module';
export * from './jobs.repository';
export * from './jobs.schemas';
export * from './jobs.service';
