-- Crash safety: storage locations the gateway is writing to, or has still to delete, recorded before the storage
-- work starts, so that work cut off by a crash can be found and finished by any replica (the reclaimer).
--  kind 'write':   a table folder being written: a fresh one not yet registered, or a table's own folder during an
--                  in-place write (overwrite, append, merge); the record goes with the registration or the commit.
--  kind 'cleanup': a folder whose catalog rows are gone (a dropped table, a deleted database) and which is still
--                  to be deleted.
-- heartbeat_at is renewed by the live writer; owner/claimed_at by whoever took the record over. No foreign key:
-- a deleted database's clean-up record must outlive the database row.
CREATE TABLE "pending_locations" (
    "id" UUID NOT NULL,
    "database_id" UUID NOT NULL,
    "database_name" TEXT NOT NULL,
    "location" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "request_id" TEXT,
    "owner" TEXT NOT NULL,
    "started_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "heartbeat_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "claimed_at" TIMESTAMPTZ(3),
    CONSTRAINT "pending_locations_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "pending_locations_kind_check" CHECK ("kind" IN ('write', 'cleanup'))
);
-- Several in-place writes may share a table's folder, so not unique; by digest like tables_location_key.
CREATE INDEX "pending_locations_location_idx" ON "pending_locations" (md5("location"));
CREATE INDEX "pending_locations_heartbeat_at_idx" ON "pending_locations" ("heartbeat_at");
CREATE INDEX "pending_locations_database_name_idx" ON "pending_locations" ("database_name");

-- The replica running a cascade drop's storage clean-up: a stale one is taken over by exactly one other replica.
ALTER TABLE "catalog_transactions" ADD COLUMN "owner" TEXT;
