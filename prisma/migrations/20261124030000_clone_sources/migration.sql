-- A shallow clone reads its source's data files in place: while a clone refers to a table, that table cannot leave
-- the catalog (drop, deregister, a cascade that leaves the clone behind). NO ACTION is checked at the end of each
-- statement, so removing a source together with its clones in one statement (a database, a cascade) is allowed.
ALTER TABLE "tables" ADD COLUMN "clone_source_id" UUID;

ALTER TABLE "tables" ADD CONSTRAINT "tables_clone_source_id_fkey" FOREIGN KEY ("clone_source_id") REFERENCES "tables"("id") ON DELETE NO ACTION ON UPDATE CASCADE;

CREATE INDEX "tables_clone_source_id_idx" ON "tables"("clone_source_id");
