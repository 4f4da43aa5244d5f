-- Issue 35: requests refused by the database's rate limit (503 "Slow down") and requests answered with another 5xx,
-- per database and hour (docs/usage-and-quotas.md). Both are also counted in read_requests / write_requests.
ALTER TABLE "usage_counters" ADD COLUMN "throttled_requests" BIGINT NOT NULL DEFAULT 0;
ALTER TABLE "usage_counters" ADD COLUMN "failed_requests" BIGINT NOT NULL DEFAULT 0;
