-- API key lifecycle (issue 34): a name and an owner (free text), when the key was last used (coarse: flushed in
-- batches by each replica), the key it was rotated from, and a per-key rate limit inside the database's budget
-- (NULL: only the database's). Existing keys keep NULL everywhere and behave as before.
ALTER TABLE "api_keys" ADD COLUMN "name" TEXT;
ALTER TABLE "api_keys" ADD COLUMN "owner" TEXT;
ALTER TABLE "api_keys" ADD COLUMN "last_used_at" TIMESTAMPTZ(3);
ALTER TABLE "api_keys" ADD COLUMN "rotated_from" UUID;
ALTER TABLE "api_keys" ADD COLUMN "rate_limit_limit" INTEGER;
ALTER TABLE "api_keys" ADD COLUMN "rate_limit_window_ms" INTEGER;
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_rate_limit_check" CHECK (
    ("rate_limit_limit" IS NULL AND "rate_limit_window_ms" IS NULL)
    OR ("rate_limit_limit" > 0 AND "rate_limit_window_ms" > 0)
);
