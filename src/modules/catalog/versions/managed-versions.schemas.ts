import { z } from 'zod';
import { TableVersion } from './table-versions.schemas';

/**
 * Request and response bodies of the catalog-managed version operations (CreateTableVersion,
 * BatchCreateTableVersions, BatchDeleteTableVersions, BatchCommitTables), in the spec's shapes. Unknown fields are
 * ignored; `null` means absent.
 */
const base = { identity: z.unknown().optional(), context: z.unknown().optional() };
const optStr = z
  .string()
  .nullish()
  .transform((v) => v ?? undefined);
const version = z.number({ error: 'version is required' }).int().nonnegative().max(Number.MAX_SAFE_INTEGER);
const tableId = z.array(z.string()).min(1, 'id must name a table');

const entryFields = {
  version,
  manifest_path: z
    .string({ error: 'manifest_path is required' })
    .min(1)
    .describe("the staged manifest (a path on the table's object store)"),
  manifest_size: z
    .number()
    .int()
    .nonnegative()
    .nullish()
    .transform((v) => v ?? undefined),
  e_tag: optStr,
  metadata: z
    .record(z.string(), z.string())
    .nullish()
    .transform((v) => v ?? undefined),
  naming_scheme: optStr.describe('V1 or V2 (default)'),
  branch: optStr.describe('Branch to target; absent, `""` or `"main"` = main.'),
};

export const CreateTableVersionBody = z.object({ ...base, id: z.array(z.string()).nullish(), ...entryFields }).loose();
export const CreateTableVersionEntry = z.object({ id: tableId, ...entryFields }).loose();
export const BatchCreateTableVersionsBody = z
  .object({ ...base, entries: z.array(CreateTableVersionEntry, { error: 'entries is required' }) })
  .loose();

const VersionRange = z.object({
  start_version: z.number({ error: 'start_version is required' }).int().nonnegative(),
  end_version: z.number({ error: 'end_version is required' }).int().min(-1),
});
const deleteFields = {
  branch: optStr.describe('Branch to target; absent, `""` or `"main"` = main.'),
  ranges: z.array(VersionRange, { error: 'ranges is required' }),
};
export const BatchDeleteTableVersionsBody = z.object({ ...base, id: z.array(z.string()).nullish(), ...deleteFields }).loose();

export const BatchCommitTablesBody = z
  .object({
    ...base,
    operations: z.array(
      z
        .object({
          create_table_version: z
            .object({ ...base, id: tableId, ...entryFields })
            .loose()
            .nullish(),
          delete_table_versions: z
            .object({ ...base, id: tableId, ...deleteFields })
            .loose()
            .nullish(),
          declare_table: z.unknown().optional(),
          deregister_table: z.unknown().optional(),
        })
        .loose(),
      { error: 'operations is required' },
    ),
  })
  .loose();

export const CreateTableVersionResponse = z.object({ version: TableVersion }).meta({ id: 'CreateTableVersionResponse' });
export const BatchCreateTableVersionsResponse = z
  .object({ versions: z.array(TableVersion).describe('in the order of the request entries') })
  .meta({ id: 'BatchCreateTableVersionsResponse' });
export const BatchDeleteTableVersionsResponse = z
  .object({ deleted_count: z.number().int().nonnegative() })
  .meta({ id: 'BatchDeleteTableVersionsResponse' });
export const BatchCommitTablesResponse = z
  .object({
    results: z.array(
      z.object({
        create_table_version: CreateTableVersionResponse.optional(),
        delete_table_versions: BatchDeleteTableVersionsResponse.optional(),
      }),
    ),
  })
  .meta({ id: 'BatchCommitTablesResponse' });
