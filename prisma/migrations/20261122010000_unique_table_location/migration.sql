-- One catalog entry per storage folder: two table names sharing a folder would let dropping one delete the
-- other's data. Indexed by digest so that arbitrarily long locations stay within btree limits.
CREATE UNIQUE INDEX "tables_location_key" ON "tables" (md5("location"));
