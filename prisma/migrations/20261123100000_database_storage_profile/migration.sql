-- Which storage profile (STORAGE_PROFILES) a database's tables live in; 'default' is the one made from STORAGE_ROOT.
ALTER TABLE "databases" ADD COLUMN "storage_profile" TEXT NOT NULL DEFAULT 'default';
