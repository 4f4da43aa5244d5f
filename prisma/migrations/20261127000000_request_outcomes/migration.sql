-- The outcome of each keyed write (docs/idempotency.md): a retry of a write that already happened is answered with
-- the original answer instead of running again. One row per (database, principal, scope_key): scope_key is
-- 'k:<Idempotency-Key>' for a client's own key, or 'r:<method> <path> <x-request-id>' for the request id the
-- official client repeats on every retry of one request. A row is 'running' while its owner replica works on the
-- request (the lease is renewed; a lapsed lease means the owner is gone) and 'done' with the answer afterwards. A row
-- expires `window` after its claim.
CREATE TABLE "request_outcomes" (
    "id" UUID NOT NULL,
    "database_id" UUID NOT NULL,
    "principal" TEXT NOT NULL,
    "scope_key" TEXT NOT NULL,
    "route" TEXT NOT NULL,
    "body_digest" TEXT,
    "state" TEXT NOT NULL,
    "owner" TEXT NOT NULL,
    "lease_until" TIMESTAMPTZ(3) NOT NULL,
    "status" INTEGER,
    "content_type" TEXT,
    "answer" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    CONSTRAINT "request_outcomes_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "request_outcomes_state_check" CHECK ("state" IN ('running', 'done')),
    CONSTRAINT "request_outcomes_database_id_fkey" FOREIGN KEY ("database_id") REFERENCES "databases"("id") ON DELETE CASCADE ON UPDATE CASCADE
) WITH (fillfactor = 70);
-- Room in each page (fillfactor) and no indexed column changed by the answer's UPDATE: it is a HOT update, with no
-- index entries written on the write path.

CREATE UNIQUE INDEX "request_outcomes_database_id_principal_scope_key_key" ON "request_outcomes"("database_id", "principal", "scope_key");
CREATE INDEX "request_outcomes_expires_at_idx" ON "request_outcomes"("expires_at");
