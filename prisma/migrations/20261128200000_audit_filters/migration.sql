-- Issue 35: the audit trail filtered by action, actor or target (GET /admin/v1/databases/{name}/audit?action=…).
-- Each filter reads its own index in the trail's order (newest first, keyset on created_at, id), so a filter over a
-- busy database's trail does not scan the whole trail. An action prefix (`table.`, a LIKE 'table.%') is read from the
-- action index's range or from the trail's order index, filtered, whichever the planner finds cheaper. Actor and
-- target are indexed on their md5 (as tables_location_key): a target (a table id of up to 32 levels, kept up to 4096
-- characters) may exceed what a btree entry holds; the repository asks `md5(target) = md5($1) AND target = $1`.
CREATE INDEX "audit_events_database_id_action_created_at_id_idx" ON "audit_events"("database_id", "action", "created_at" DESC, "id" DESC);
CREATE INDEX "audit_events_database_id_actor_created_at_id_idx" ON "audit_events"("database_id", md5("actor"), "created_at" DESC, "id" DESC);
CREATE INDEX "audit_events_database_id_target_created_at_id_idx" ON "audit_events"("database_id", md5("target"), "created_at" DESC, "id" DESC);
