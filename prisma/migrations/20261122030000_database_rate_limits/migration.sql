-- Per-database request rate limits set by the operator; NULL means the gateway's defaults
-- (RATE_LIMIT_LIMIT requests per RATE_LIMIT_WINDOW_MS).
ALTER TABLE "databases" ADD COLUMN "rate_limit_limit" INTEGER;
ALTER TABLE "databases" ADD COLUMN "rate_limit_window_ms" INTEGER;
ALTER TABLE "databases" ADD CONSTRAINT "databases_rate_limit_check" CHECK (
    ("rate_limit_limit" IS NULL AND "rate_limit_window_ms" IS NULL)
    OR ("rate_limit_limit" > 0 AND "rate_limit_window_ms" > 0)
);
