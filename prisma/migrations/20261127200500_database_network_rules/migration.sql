-- Network rules of a database (docs/access-control.md, "Network rules"): the source addresses its requests may come
-- from (CIDRs, IPv4 and IPv6; empty: any) and whether it is reachable only under the private host suffixes
-- (PRIVATE_HOST_SUFFIXES). Both travel with the cached key and database lookups.
ALTER TABLE "databases" ADD COLUMN "allowed_cidrs" TEXT[] NOT NULL DEFAULT '{}';
ALTER TABLE "databases" ADD COLUMN "private_only" BOOLEAN NOT NULL DEFAULT false;
