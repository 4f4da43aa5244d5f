-- Usage metering and quotas per database (README "Usage and quotas").

-- Quotas: null → the gateway's default (QUOTA_* settings).
ALTER TABLE "databases"
  ADD COLUMN "max_tables" INTEGER,
  ADD COLUMN "max_namespaces" INTEGER,
  ADD COLUMN "max_storage_bytes" BIGINT,
  ADD COLUMN "max_rows_per_write" BIGINT;

-- Request and write counters per database and UTC hour, added to by every replica's periodic flush. No foreign key:
-- usage outlives its database (billing), and a flush never fails for a database deleted meanwhile.
CREATE TABLE "usage_counters" (
    "database_id"    UUID NOT NULL,
    "hour"           TIMESTAMPTZ(3) NOT NULL,
    "read_requests"  BIGINT NOT NULL DEFAULT 0,
    "write_requests" BIGINT NOT NULL DEFAULT 0,
    "rows_written"   BIGINT NOT NULL DEFAULT 0,
    "bytes_ingested" BIGINT NOT NULL DEFAULT 0,
    "queries"        BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT "usage_counters_pkey" PRIMARY KEY ("database_id", "hour")
);
CREATE INDEX "usage_counters_hour_idx" ON "usage_counters" ("hour");

-- Flushes applied, by replica and sequence number: a retried flush finds its row and adds nothing twice.
CREATE TABLE "usage_flushes" (
    "replica"    TEXT NOT NULL,
    "seq"        BIGINT NOT NULL,
    "flushed_at" TIMESTAMPTZ(3) NOT NULL DEFAULT now(),
    CONSTRAINT "usage_flushes_pkey" PRIMARY KEY ("replica", "seq")
);
CREATE INDEX "usage_flushes_flushed_at_idx" ON "usage_flushes" ("flushed_at");

-- Per database and UTC day: storage (sum of its tables' total_bytes), tables and namespaces, as last measured that day.
CREATE TABLE "usage_daily" (
    "database_id"   UUID NOT NULL,
    "day"           DATE NOT NULL,
    "storage_bytes" BIGINT NOT NULL DEFAULT 0,
    "tables"        INTEGER NOT NULL DEFAULT 0,
    "namespaces"    INTEGER NOT NULL DEFAULT 0,
    "measured_at"   TIMESTAMPTZ(3) NOT NULL DEFAULT now(),
    CONSTRAINT "usage_daily_pkey" PRIMARY KEY ("database_id", "day")
);
CREATE INDEX "usage_daily_day_storage_idx" ON "usage_daily" ("day", "storage_bytes" DESC);

-- Per table: the last measured size, when it was measured, when the gateway last saw it written (or handed out for
-- writing), and the refresher lease. A row per table, kept by the trigger below.
CREATE TABLE "table_usage" (
    "table_id"    UUID NOT NULL,
    "database_id" UUID NOT NULL,
    "total_bytes" BIGINT NOT NULL DEFAULT 0,
    "num_rows"    BIGINT NOT NULL DEFAULT 0,
    "touched_at"  TIMESTAMPTZ(3) NOT NULL DEFAULT now(),
    "scanned_at"  TIMESTAMPTZ(3),
    "lease_owner" TEXT,
    "lease_until" TIMESTAMPTZ(3),
    CONSTRAINT "table_usage_pkey" PRIMARY KEY ("table_id"),
    CONSTRAINT "table_usage_table_id_fkey" FOREIGN KEY ("table_id") REFERENCES "tables"("id") ON DELETE CASCADE ON UPDATE CASCADE
);
CREATE INDEX "table_usage_database_id_idx" ON "table_usage" ("database_id");
CREATE INDEX "table_usage_scanned_at_idx" ON "table_usage" ("scanned_at");

CREATE FUNCTION "table_usage_track"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "table_usage" ("table_id", "database_id") VALUES (NEW."id", NEW."database_id") ON CONFLICT DO NOTHING;
  RETURN NEW;
END
$$;
CREATE TRIGGER "tables_usage_track" AFTER INSERT ON "tables" FOR EACH ROW EXECUTE FUNCTION "table_usage_track"();

INSERT INTO "table_usage" ("table_id", "database_id") SELECT "id", "database_id" FROM "tables";
