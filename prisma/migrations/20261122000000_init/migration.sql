-- Catalog core: tenants (databases), API keys, namespaces, tables, long-running transactions.
-- Text keys used for ordering and keyset pagination use COLLATE "C" (byte order, index-friendly, locale-free).

CREATE TABLE "databases" (
    "id" UUID NOT NULL,
    "name" TEXT COLLATE "C" NOT NULL,
    "properties" JSONB NOT NULL DEFAULT '{}',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "databases_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "databases_name_key" ON "databases"("name");

CREATE TABLE "api_keys" (
    "id" UUID NOT NULL,
    "database_id" UUID NOT NULL,
    "hash" TEXT NOT NULL,
    "role" TEXT NOT NULL,
    "description" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3),
    "revoked_at" TIMESTAMPTZ(3),
    CONSTRAINT "api_keys_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "api_keys_role_check" CHECK ("role" IN ('read', 'write', 'admin'))
);
CREATE UNIQUE INDEX "api_keys_hash_key" ON "api_keys"("hash");
CREATE INDEX "api_keys_database_id_idx" ON "api_keys"("database_id");
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_database_id_fkey"
    FOREIGN KEY ("database_id") REFERENCES "databases"("id") ON DELETE CASCADE ON UPDATE CASCADE;

CREATE TABLE "namespaces" (
    "id" UUID NOT NULL,
    "database_id" UUID NOT NULL,
    "catalog" TEXT COLLATE "C" NOT NULL DEFAULT '',
    "path" TEXT COLLATE "C" NOT NULL,
    "parent_path" TEXT COLLATE "C" NOT NULL,
    "name" TEXT COLLATE "C" NOT NULL,
    "properties" JSONB NOT NULL DEFAULT '{}',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "namespaces_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "namespaces_database_id_catalog_path_key" ON "namespaces"("database_id", "catalog", "path");
CREATE INDEX "namespaces_database_id_catalog_parent_path_name_idx" ON "namespaces"("database_id", "catalog", "parent_path", "name");
ALTER TABLE "namespaces" ADD CONSTRAINT "namespaces_database_id_fkey"
    FOREIGN KEY ("database_id") REFERENCES "databases"("id") ON DELETE CASCADE ON UPDATE CASCADE;

CREATE TABLE "tables" (
    "id" UUID NOT NULL,
    "database_id" UUID NOT NULL,
    "catalog" TEXT COLLATE "C" NOT NULL DEFAULT '',
    "namespace_path" TEXT COLLATE "C" NOT NULL,
    "name" TEXT COLLATE "C" NOT NULL,
    "location" TEXT NOT NULL,
    "properties" JSONB NOT NULL DEFAULT '{}',
    "materialized_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "tables_pkey" PRIMARY KEY ("id")
);
-- Also the keyset-pagination index of GET /v1/table: (database, catalog) then (namespace_path, name).
CREATE UNIQUE INDEX "tables_database_id_catalog_namespace_path_name_key" ON "tables"("database_id", "catalog", "namespace_path", "name");
ALTER TABLE "tables" ADD CONSTRAINT "tables_database_id_fkey"
    FOREIGN KEY ("database_id") REFERENCES "databases"("id") ON DELETE CASCADE ON UPDATE CASCADE;

CREATE TABLE "catalog_transactions" (
    "id" UUID NOT NULL,
    "database_id" UUID NOT NULL,
    "operation" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "pending" JSONB NOT NULL DEFAULT '[]',
    "error" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "catalog_transactions_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "catalog_transactions_status_idx" ON "catalog_transactions"("status");
