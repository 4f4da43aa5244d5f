-- Table maintenance (README "Table maintenance"): a database's policy, delayed jobs, one queued automatic maintenance
-- job per table (a burst of commits makes one job), and the running maintenance jobs counted per database.
ALTER TABLE "databases" ADD COLUMN "maintenance" JSONB;

ALTER TABLE "jobs" ADD COLUMN "not_before" TIMESTAMPTZ(3);

CREATE UNIQUE INDEX "jobs_one_queued_maintenance" ON "jobs" ("database_id", "catalog", "table_id")
  WHERE "state" = 'QUEUED' AND "job_type" = 'maintenance' AND ("spec" ->> 'automatic') = 'true';

CREATE INDEX "jobs_running_maintenance" ON "jobs" ("database_id")
  WHERE "state" = 'RUNNING' AND ("spec" ->> 'maintenance') IS NOT NULL;
