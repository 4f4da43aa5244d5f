-- Storage counted from real bytes (README "Usage and quotas"). table_usage.total_bytes becomes the bytes of every
-- object under the table's location on its store (all versions, manifests, indices, deletion files), as listed by the
-- storage refresher; current_bytes keeps the current version's data bytes beside it (what total_bytes was before);
-- written_bytes is what writes through the gateway added since the last measurement (an estimate the next
-- measurement replaces). A database's storage is the sum of total_bytes + written_bytes.
ALTER TABLE "table_usage" ADD COLUMN "current_bytes" BIGINT NOT NULL DEFAULT 0;
ALTER TABLE "table_usage" ADD COLUMN "written_bytes" BIGINT NOT NULL DEFAULT 0;

-- The figures measured so far were current-version bytes: kept as such, and every table is due for a measurement
-- of its real bytes (never-measured tables come first, within the refresher's per-minute budget).
UPDATE "table_usage" SET "current_bytes" = "total_bytes", "scanned_at" = NULL;

-- The daily snapshot keeps the current-version figure beside storage_bytes.
ALTER TABLE "usage_daily" ADD COLUMN "current_bytes" BIGINT;
