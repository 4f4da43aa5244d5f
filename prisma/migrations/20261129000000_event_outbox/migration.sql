-- Issue 36: change events. A transactional outbox (written in the catalog transaction of the change it describes),
-- the sinks it is delivered to (NATS JetStream, signed webhooks; per database or for the fleet) and their dead letters.
--
-- An event's `seq` is not taken at insert: the dispatcher's sequencer gives committed events their numbers, in one
-- transaction at a time (the outbox_state row is its lock), so a sink's cursor (every seq up to it is delivered)
-- never passes an event whose transaction had not committed yet when a larger number was read.
CREATE TABLE "outbox_events" (
    "id" UUID NOT NULL,
    "seq" BIGINT,
    "database_id" UUID,
    "database_name" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "subject" TEXT NOT NULL,
    "object_id" TEXT[] NOT NULL DEFAULT '{}',
    "data" JSONB NOT NULL,
    -- Microseconds: the sequencer's order (events of one transaction follow each other within a millisecond).
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT "outbox_events_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "outbox_events_seq_key" ON "outbox_events"("seq");
CREATE INDEX "outbox_events_database_id_seq_idx" ON "outbox_events"("database_id", "seq");
CREATE INDEX "outbox_events_unsequenced_idx" ON "outbox_events"("created_at", "id") WHERE "seq" IS NULL;

CREATE TABLE "outbox_state" (
    "id" INTEGER NOT NULL,
    "last_seq" BIGINT NOT NULL,
    CONSTRAINT "outbox_state_pkey" PRIMARY KEY ("id")
);
INSERT INTO "outbox_state" ("id", "last_seq") VALUES (1, 0);

CREATE TABLE "event_sinks" (
    "id" UUID NOT NULL,
    "database_id" UUID,
    "name" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "target" JSONB NOT NULL,
    "secret" TEXT,
    "types" TEXT[] NOT NULL DEFAULT '{}',
    "namespace_prefix" TEXT[] NOT NULL DEFAULT '{}',
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "managed_by" TEXT NOT NULL DEFAULT 'api',
    "cursor" BIGINT NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "next_attempt_at" TIMESTAMPTZ(3),
    "last_error" TEXT,
    "last_delivered_at" TIMESTAMPTZ(3),
    "delivered_count" BIGINT NOT NULL DEFAULT 0,
    "failed_count" BIGINT NOT NULL DEFAULT 0,
    "lease_owner" TEXT,
    "lease_expires_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "event_sinks_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "event_sinks_kind_check" CHECK ("kind" IN ('nats', 'webhook'))
);
-- One name per database, and one per fleet (database_id NULL).
CREATE UNIQUE INDEX "event_sinks_scope_name_key" ON "event_sinks"(COALESCE("database_id", '00000000-0000-0000-0000-000000000000'::uuid), "name");
ALTER TABLE "event_sinks" ADD CONSTRAINT "event_sinks_database_id_fkey" FOREIGN KEY ("database_id") REFERENCES "databases"("id") ON DELETE CASCADE ON UPDATE CASCADE;

CREATE TABLE "event_dead_letters" (
    "id" UUID NOT NULL,
    "sink_id" UUID NOT NULL,
    "event_id" UUID NOT NULL,
    "event_seq" BIGINT NOT NULL,
    "event" JSONB NOT NULL,
    "attempts" INTEGER NOT NULL,
    "last_error" TEXT,
    "state" TEXT NOT NULL DEFAULT 'dead',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "event_dead_letters_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "event_dead_letters_state_check" CHECK ("state" IN ('dead', 'replay'))
);
CREATE UNIQUE INDEX "event_dead_letters_sink_id_event_id_key" ON "event_dead_letters"("sink_id", "event_id");
CREATE INDEX "event_dead_letters_sink_id_event_seq_idx" ON "event_dead_letters"("sink_id", "event_seq");
ALTER TABLE "event_dead_letters" ADD CONSTRAINT "event_dead_letters_sink_id_fkey" FOREIGN KEY ("sink_id") REFERENCES "event_sinks"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Audit records written before an engine commit and never confirmed (their writer died between the commit and its
-- bookkeeping): the reclaimer's commit completion looks for them (docs/events.md, "After a crash").
CREATE INDEX "audit_events_pending_idx" ON "audit_events"("created_at") WHERE ("details"->>'outcome') = 'pending';
