-- A keyed write's claim is on the write path: its foreign key to databases cost a key-share lock on the database's
-- row (shared by every concurrent write of the database) and a lookup per claim, about half of the claim's time. The
-- rows of a deleted database are not needed by anything and expire with their window (the trim deletes them); a
-- database made again under the same name has a new id, so nothing of the old one's rows is ever found.
ALTER TABLE "request_outcomes" DROP CONSTRAINT "request_outcomes_database_id_fkey";
