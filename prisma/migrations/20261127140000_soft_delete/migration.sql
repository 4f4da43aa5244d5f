-- Soft-delete, undrop and protection (README "Dropping tables").
-- A database's delete profile (null: the server's DROP_PROFILE / DROP_RETENTION_SECONDS) and its protection flag.
ALTER TABLE "databases" ADD COLUMN "drop_profile" TEXT;
ALTER TABLE "databases" ADD COLUMN "drop_retention_seconds" INTEGER;
ALTER TABLE "databases" ADD COLUMN "protected" BOOLEAN NOT NULL DEFAULT false;

-- A table dropped under a soft profile: its row leaves "tables" (so every query over live tables, and the name, are
-- free of it at once) and waits here, with its data in place, until it is undropped or purged (purge_after). It keeps
-- the table's id: an undrop gives it back, so a clone's reference to it stays valid.
CREATE TABLE "dropped_tables" (
    "id" UUID NOT NULL,
    "database_id" UUID NOT NULL,
    "catalog" TEXT NOT NULL DEFAULT '',
    "namespace_path" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "location" TEXT NOT NULL,
    "properties" JSONB NOT NULL DEFAULT '{}',
    "materialized_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    "clone_source_id" UUID,
    "last_version" BIGINT,
    "storage_bytes" BIGINT,
    "dropped_at" TIMESTAMPTZ(3) NOT NULL DEFAULT now(),
    "purge_after" TIMESTAMPTZ(3) NOT NULL,
    "dropped_by" TEXT NOT NULL,
    "request_id" TEXT,

    CONSTRAINT "dropped_tables_pkey" PRIMARY KEY ("id")
);

ALTER TABLE "dropped_tables" ADD CONSTRAINT "dropped_tables_database_id_fkey" FOREIGN KEY ("database_id") REFERENCES "databases"("id") ON DELETE CASCADE ON UPDATE CASCADE;

CREATE INDEX "dropped_tables_database_id_catalog_dropped_at_id_idx" ON "dropped_tables"("database_id", "catalog", "dropped_at" DESC, "id" DESC);
CREATE INDEX "dropped_tables_purge_after_idx" ON "dropped_tables"("purge_after");
-- By digest, as tables_location_key: arbitrarily long locations stay within btree limits.
CREATE INDEX "dropped_tables_location_idx" ON "dropped_tables"(md5("location"));
CREATE INDEX "dropped_tables_clone_source_id_idx" ON "dropped_tables"("clone_source_id");
