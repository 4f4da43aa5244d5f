// What the audit feature offers the other features (test/unit/import-graph.test.ts: they import nothing else of it).
export * from './audit-context';
export * from './audit.schemas';
export * from './audit.service';
export * from './audited.decorator';
