-- Issue 37: replicas cache key lookups and database settings for minutes; a change that must reach every replica at
-- once (a key revoked or changed, a database's limits, quotas or network rules changed, a database deleted) writes
-- a row here in its own transaction, and every replica reads the recent rows each AUTH_CACHE_SYNC_MS and forgets
-- what they name (docs/production.md, "Caches across replicas"). Rows are trimmed after an hour.
CREATE TABLE "cache_invalidations" (
    "seq" BIGSERIAL NOT NULL,
    -- The transaction's start (now()), never after its commit: a reader looking back a window from its own now()
    -- sees a row committed since its last look, whatever the order of commits.
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    "database_id" UUID,
    "key_id" UUID,
    CONSTRAINT "cache_invalidations_pkey" PRIMARY KEY ("seq")
);
CREATE INDEX "cache_invalidations_created_at_idx" ON "cache_invalidations"("created_at");
