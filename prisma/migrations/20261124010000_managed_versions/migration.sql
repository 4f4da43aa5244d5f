-- Catalog-managed table versions (the spec's `managed_versioning`). A database that enables it has every commit of
-- its tables go through CreateTableVersion: the row below is the version's claim, and the catalog (not the object
-- store's listing) decides which versions exist and which is the latest. The flag may only change while the
-- database holds no tables (a table's history is either all here or all on storage).
ALTER TABLE "databases" ADD COLUMN "managed_versioning" BOOLEAN NOT NULL DEFAULT false;

-- One committed version of a managed table (of a branch; '' is main). (table_id, branch, version) is the arbiter of
-- concurrent commits: the second writer of a version fails on the primary key and is told to retry (409 code 14).
-- manifest_file is the manifest's path relative to the table's folder (e.g. `_versions/18446744073709551614.manifest`).
CREATE TABLE "table_versions" (
    "table_id" UUID NOT NULL,
    "branch" TEXT NOT NULL DEFAULT '',
    "version" BIGINT NOT NULL,
    "manifest_file" TEXT NOT NULL,
    "manifest_size" BIGINT,
    "e_tag" TEXT,
    "naming_scheme" TEXT NOT NULL DEFAULT 'V2',
    "metadata" JSONB NOT NULL DEFAULT '{}',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "table_versions_pkey" PRIMARY KEY ("table_id", "branch", "version"),
    CONSTRAINT "table_versions_version_check" CHECK ("version" >= 0),
    CONSTRAINT "table_versions_table_id_fkey" FOREIGN KEY ("table_id") REFERENCES "tables"("id") ON DELETE CASCADE ON UPDATE CASCADE
);
