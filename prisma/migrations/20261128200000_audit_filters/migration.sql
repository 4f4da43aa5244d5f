-- Issue 35: the audit trail filtered by action, actor or target (GET /admin/v1/databases/{name}/audit?action=…).
-- Each filter reads its own index in the trail's order (newest first, keyset on created_at, id), so a filter over a
-- busy database's trail does not scan the whole trail. An action prefix (`table.`) reads the action index's range.
CREATE INDEX "audit_events_database_id_action_created_at_id_idx" ON "audit_events"("database_id", "action", "created_at" DESC, "id" DESC);
CREATE INDEX "audit_events_database_id_actor_created_at_id_idx" ON "audit_events"("database_id", "actor", "created_at" DESC, "id" DESC);
CREATE INDEX "audit_events_database_id_target_created_at_id_idx" ON "audit_events"("database_id", "target", "created_at" DESC, "id" DESC);
