-- What a runner claims next: queued jobs by when they are due (not_before, else created_at), so that a claim reads
-- the few due ones first and stops, however many delayed jobs (one per maintained table) wait behind them.
CREATE INDEX "jobs_queued_due_idx" ON "jobs" ((COALESCE("not_before", "created_at"))) WHERE "state" = 'QUEUED';
