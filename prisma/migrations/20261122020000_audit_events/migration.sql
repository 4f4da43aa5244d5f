-- Audit trail: who (API key id, token subject, operator) created, dropped or renamed what, and when.
-- Kept without a foreign key so that records outlive the database they describe.
CREATE TABLE "audit_events" (
    "id" UUID NOT NULL,
    "database_id" UUID,
    "database_name" TEXT NOT NULL,
    "actor" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "target" TEXT NOT NULL,
    "details" JSONB NOT NULL DEFAULT '{}',
    "request_id" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "audit_events_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "audit_events_database_id_created_at_id_idx" ON "audit_events"("database_id", "created_at" DESC, "id" DESC);
