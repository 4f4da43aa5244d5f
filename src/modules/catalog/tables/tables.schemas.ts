import { z } from 'zod';
import { flag, mode, PageQuery, PropertiesSchema, queryParam, queryText } from '../../../platform/http/validation/fields';
import { propertiesField as props, requestBase, storageOptionsField } from '../catalog.schemas';

/**
 * Bodies, queries and answers of the table catalog routes (declare, register, describe, rename, stats, list, drop,
 * deregister): the bodies are applied by ZodValidationPipe (@ValidBody, @ValidQuery), the answers are the types
 * the service returns (so an answer that drifts from its schema does not compile), and the OpenAPI document shows
 * both; schemas with an `id` (`.meta`) become its named components.
 */
const properties = PropertiesSchema.nullish().transform((v) => v ?? undefined);

export const DeclareTableBody = z
  .object({
    ...requestBase,
    location: z
      .string()
      .nullish()
      .transform((v) => v ?? undefined),
    properties,
    vend_credentials: z.boolean().nullish(),
  })
  .loose();
export const RegisterTableBody = z
  .object({
    ...requestBase,
    location: z.string({ error: 'location is required' }).min(1, 'location must not be empty'),
    mode: mode(['Create', 'Overwrite'], 'Create'),
    properties,
  })
  .loose();
export const DescribeTableBody = z
  .object({
    ...requestBase,
    version: z.number().int().nonnegative().nullable().optional(),
    branch: z.string().nullable().optional(),
    tag: z.string().min(1, 'tag must not be empty').nullish(),
    with_table_uri: z.boolean().nullish(),
    load_detailed_metadata: z.boolean().nullish(),
    check_declared: z.boolean().nullish(),
    vend_credentials: z.boolean().nullish(),
  })
  .loose();
export const RenameTableBody = z
  .object({
    ...requestBase,
    new_table_name: z.string({ error: 'new_table_name is required' }),
    new_namespace_id: z.array(z.string()).nullable().optional(),
    /** The official remote client's name for new_namespace_id. */
    new_namespace: z.array(z.string()).nullable().optional(),
  })
  .loose();
export const StatsBody = z.object({ ...requestBase, branch: z.string().nullable().optional() }).loose();

// ---------------------------------------------------------------------------------------------- query strings

export const ListTablesQuery = PageQuery.extend({
  include_declared: flag(true).describe('Include declared tables that have no data yet (default true).'),
});
/** ListTables (one namespace): also by name prefix, which is one range of the (namespace, name) index there. */
export const ListNamespaceTablesQuery = ListTablesQuery.extend({
  prefix: queryParam(
    z
      .string()
      .regex(/^[A-Za-z0-9_.-]{1,256}$/, "prefix uses only letters, digits, '_', '-' and '.'")
      .optional(),
  ).describe('Only the tables whose name starts with this (Enterprise extension; one index range, at any table count).'),
});
/** DescribeTable: a query parameter overrides the body field of the same name. */
export const DescribeTableQuery = z.object({
  with_table_uri: flag().describe('Include `table_uri` (always included by this gateway).'),
  load_detailed_metadata: flag().describe('Also report `is_only_declared`.'),
  check_declared: flag().describe('Report `is_only_declared`.'),
});
export const StatsQuery = z.object({ branch: queryText().describe('Branch to read (on POST, when the body names none).') });

// ---------------------------------------------------------------------------------------------- answers

export const ListTablesResponse = z
  .object({
    tables: z.array(z.string()),
    page_token: z.string().optional().describe('present when there are more results: pass it back as `page_token`'),
  })
  .meta({ id: 'ListTablesResponse' });
export type ListTablesResponse = z.infer<typeof ListTablesResponse>;

const JsonArrowField: z.ZodType = z
  .object({
    name: z.string(),
    get type() {
      return JsonArrowDataType;
    },
    nullable: z.boolean(),
    metadata: z.record(z.string(), z.string()).optional(),
  })
  .meta({ id: 'JsonArrowField' });
const JsonArrowDataType: z.ZodType = z
  .object({
    type: z
      .string()
      .describe(
        "Arrow type name, spelled as the asking client reads it: the Lance Namespace converters' names (`utf8`, " +
          "`float32`, `decimal128`, …) for namespace clients, Lance's own (`string`, `float`, `decimal:128:p:s`, …) " +
          'for the official remote client',
      ),
    get fields() {
      return z.array(JsonArrowField).optional();
    },
    length: z.number().int().optional(),
  })
  .meta({ id: 'JsonArrowDataType' });
export const JsonArrowSchema = z
  .object({ fields: z.array(JsonArrowField), metadata: z.record(z.string(), z.string()).optional() })
  .meta({ id: 'JsonArrowSchema' });
export type JsonArrowSchema = z.infer<typeof JsonArrowSchema>;

/** How the client reaches a table's data itself: DescribeTable and DeclareTable end with these two fields. */
const tableAccess = {
  storage_options: storageOptionsField,
  managed_versioning: z
    .boolean()
    .optional()
    .describe("true when the catalog manages the table's versions: commit through CreateTableVersion"),
};

export const DescribeTableResponse = z
  .object({
    table: z.string(),
    namespace: z.array(z.string()),
    location: z.string().describe('absolute location of the table data'),
    table_uri: z.string().describe('same as `location`'),
    properties: props,
    is_only_declared: z.boolean().optional().describe('with `check_declared` or `load_detailed_metadata`'),
    version: z.number().int().optional().describe('latest (or requested) version, when the table has data'),
    schema: JsonArrowSchema.optional().describe('Arrow schema, when the table has data'),
    ...tableAccess,
  })
  .meta({ id: 'DescribeTableResponse' });
export type DescribeTableResponse = z.infer<typeof DescribeTableResponse>;
export const DeclareTableResponse = z
  .object({
    location: z.string().describe('absolute location the client writes the table data to'),
    properties: props,
    ...tableAccess,
  })
  .meta({ id: 'DeclareTableResponse' });
export type DeclareTableResponse = z.infer<typeof DeclareTableResponse>;
export const RegisterTableResponse = z.object({ location: z.string(), properties: props }).meta({ id: 'RegisterTableResponse' });
export type RegisterTableResponse = z.infer<typeof RegisterTableResponse>;
const RemovedTable = z.object({ id: z.array(z.string()), location: z.string(), properties: props });
export const DropTableResponse = RemovedTable.extend({
  job_id: z
    .string()
    .optional()
    .describe('set when deleting the folder outlasted DROP_SYNC_BUDGET_MS: the table is gone, its files are being deleted by this job'),
}).meta({ id: 'DropTableResponse' });
export type DropTableResponse = z.infer<typeof DropTableResponse>;
export const DeregisterTableResponse = RemovedTable.meta({ id: 'DeregisterTableResponse' });
export type DeregisterTableResponse = z.infer<typeof DeregisterTableResponse>;
export const RenameTableResponse = z.object({}).meta({ id: 'RenameTableResponse' });
export type RenameTableResponse = z.infer<typeof RenameTableResponse>;

const int = z.number().int();
export const GetTableStatsResponse = z
  .object({
    total_bytes: int,
    num_rows: int,
    num_indices: int,
    fragment_stats: z.object({
      num_fragments: int,
      num_small_fragments: int,
      lengths: z.object({ min: int, max: int, mean: int, p25: int, p50: int, p75: int, p99: int }),
    }),
  })
  .meta({ id: 'GetTableStatsResponse' });
export type GetTableStatsResponse = z.infer<typeof GetTableStatsResponse>;
