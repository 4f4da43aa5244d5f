-- Issue 34: grants narrow a key's role to privileges on namespaces and tables (docs/access-control.md, "Grants").
-- NULL keeps a key's behaviour as before: its role on the whole database.
ALTER TABLE "api_keys" ADD COLUMN "grants" JSONB;
