// What the catalog feature offers the other features (test/unit/import-graph.test.ts: they import nothing else of it).
export * from './catalog.schemas';
export * from './tables/tables.schemas';
export * from './tables/table-write-lifecycle.service';
export * from './tables/table-write-signals';
export * from './tables/tables.module';
export * from './tables/tables.repository';
export * from './tables/tables.service';
export * from './transactions/transactions.module';
export * from './transactions/transactions.service';
export * from './versions/managed-versions.service';
export * from './versions/table-versions.repository';
export * from './versions/table-versions.schemas';
