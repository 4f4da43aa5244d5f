-- Jobs: long operations (a computed column's backfill, an index build) kept in the catalog, so that they survive a
-- replica's restart and run on any replica. A job is made 'QUEUED' (or 'RUNNING', owned by the replica that took the
-- request and starts it at once); a runner claims it with FOR UPDATE SKIP LOCKED and holds it by a lease it renews
-- (lease_expires_at). A 'RUNNING' job whose lease expired lost its runner: another replica takes it over (attempts
-- counts the runs). It ends 'DONE' (result), 'FAILED' (failure), 'CANCELLED' or 'TIMED_OUT' (too many runners lost).
-- cancel_requested: a cancel that arrived while the job ran; the runner honours it before the engine commits.
CREATE TABLE "jobs" (
    "id" UUID NOT NULL,
    "database_id" UUID NOT NULL,
    "catalog" TEXT NOT NULL DEFAULT '',
    "table_id" TEXT[] NOT NULL,
    "job_type" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "spec" JSONB NOT NULL DEFAULT '{}',
    "result" JSONB,
    "failure" JSONB,
    "cancel_requested" BOOLEAN NOT NULL DEFAULT false,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "owner" TEXT,
    "lease_expires_at" TIMESTAMPTZ(3),
    "principal" TEXT NOT NULL,
    "request_id" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" TIMESTAMPTZ(3),
    "finished_at" TIMESTAMPTZ(3),
    CONSTRAINT "jobs_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "jobs_database_id_fkey" FOREIGN KEY ("database_id") REFERENCES "databases"("id") ON DELETE CASCADE ON UPDATE CASCADE,
    CONSTRAINT "jobs_state_check" CHECK ("state" IN ('QUEUED', 'RUNNING', 'DONE', 'FAILED', 'CANCELLED', 'TIMED_OUT'))
);
-- A database's jobs, newest first (list pages).
CREATE INDEX "jobs_database_id_catalog_created_at_idx" ON "jobs" ("database_id", "catalog", "created_at" DESC, "id" DESC);
-- What runners look for: queued jobs, and running ones whose lease may have expired.
CREATE INDEX "jobs_claimable_idx" ON "jobs" ("lease_expires_at") WHERE "state" IN ('QUEUED', 'RUNNING');
