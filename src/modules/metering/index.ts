// What the metering feature offers the other features (test/unit/import-graph.test.ts: they import nothing else of it).
export * from './quotas.service';
export * from './usage-meter.service';
export * from './usage.repository';
