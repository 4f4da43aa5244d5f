-- Metering at fleet scale (docs/usage-and-quotas.md, "Storage figures"): the storage refresher measures the tables
-- the gateway has reason to think changed before the rest. `marked` says why a table is due, `marked_at` since when
-- (cleared by the measurement that covers it): 1, written through the gateway (its commits, maintenance, an undrop);
-- 2, opened for writing (a describe with a write key: how a namespace-mode writer starts). The claim takes marked
-- tables first (written, then opened, oldest mark first), then never-measured ones, then the longest unmeasured.
-- A flush writes a table's row only when it is not marked yet, is under a measurement, or (an open) its touched_at is
-- 5 min old: a table described a thousand times between two measurements is written once, or once every 5 min.
ALTER TABLE "table_usage" ADD COLUMN "marked" SMALLINT;
ALTER TABLE "table_usage" ADD COLUMN "marked_at" TIMESTAMPTZ(3);

-- What was due by a write or an open before keeps its place: an estimate not yet measured is a write.
UPDATE "table_usage" SET "marked" = CASE WHEN "written_bytes" > 0 THEN 1 ELSE 2 END, "marked_at" = "touched_at"
 WHERE "written_bytes" > 0 OR ("scanned_at" IS NOT NULL AND "touched_at" >= "scanned_at");

-- The marked tables in claim order: a handful among millions, read from the front of this index.
CREATE INDEX "table_usage_marked_idx" ON "table_usage" ("marked", "marked_at") WHERE "marked" IS NOT NULL;
