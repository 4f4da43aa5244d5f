import { z } from 'zod';
import { PropertiesSchema } from '../../platform/http/validation/fields';

/**
 * The JSON answers of the catalog and data-plane routes, written once: the services return the types inferred from these schemas (so an
 * answer that drifts from its schema does not compile), @Operation names them per route, and the OpenAPI document
 * shows them (zod 4's `z.toJSONSchema`). Schemas with an `id` (`.meta`) become named components of the document.
 */

const props = PropertiesSchema.describe('string-to-string properties');

// ---------------------------------------------------------------------------------------------- namespaces

export const CreateNamespaceResponse = z
  .object({
    properties: props.describe('the stored properties, with `created_at` (RFC 3339) added by the gateway unless given'),
  })
  .meta({ id: 'CreateNamespaceResponse' });
export type CreateNamespaceResponse = z.infer<typeof CreateNamespaceResponse>;
export const ListNamespacesResponse = z
  .object({
    namespaces: z.array(z.string()).describe('names of the direct children (last segment only), sorted'),
    page_token: z.string().optional().describe('present when there are more results: pass it back as `page_token`'),
  })
  .meta({ id: 'ListNamespacesResponse' });
export type ListNamespacesResponse = z.infer<typeof ListNamespacesResponse>;
export const DescribeNamespaceResponse = z
  .object({
    properties: props.describe('the stored properties, with `created_at` (RFC 3339); `{}` for the root namespace'),
  })
  .meta({ id: 'DescribeNamespaceResponse' });
export type DescribeNamespaceResponse = z.infer<typeof DescribeNamespaceResponse>;
export const DropNamespaceResponse = z
  .object({
    properties: props,
    transaction_id: z
      .array(z.string())
      .optional()
      .describe('present when a cascade drop continues in the background: poll it with DescribeTransaction'),
  })
  .meta({ id: 'DropNamespaceResponse' });
export type DropNamespaceResponse = z.infer<typeof DropNamespaceResponse>;

// ---------------------------------------------------------------------------------------------- tables

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
    storage_options: z
      .record(z.string(), z.string())
      .optional()
      .describe('vended storage options (credential vending): how the client reaches the table data itself; may carry `expires_at_millis`'),
    managed_versioning: z
      .boolean()
      .optional()
      .describe("true when the catalog manages the table's versions: commit through CreateTableVersion"),
  })
  .meta({ id: 'DescribeTableResponse' });
export type DescribeTableResponse = z.infer<typeof DescribeTableResponse>;
export const DeclareTableResponse = z
  .object({
    location: z.string().describe('absolute location the client writes the table data to'),
    properties: props,
    storage_options: z
      .record(z.string(), z.string())
      .optional()
      .describe('vended storage options (credential vending): how the client reaches the table data itself; may carry `expires_at_millis`'),
    managed_versioning: z
      .boolean()
      .optional()
      .describe("true when the catalog manages the table's versions: commit through CreateTableVersion"),
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
export const GetTableStatsResponse = z
  .object({
    total_bytes: z.number().int(),
    num_rows: z.number().int(),
    num_indices: z.number().int(),
    fragment_stats: z.object({
      num_fragments: z.number().int(),
      num_small_fragments: z.number().int(),
      lengths: z.object({
        min: z.number().int(),
        max: z.number().int(),
        mean: z.number().int(),
        p25: z.number().int(),
        p50: z.number().int(),
        p75: z.number().int(),
        p99: z.number().int(),
      }),
    }),
  })
  .meta({ id: 'GetTableStatsResponse' });
export type GetTableStatsResponse = z.infer<typeof GetTableStatsResponse>;
export const DescribeTransactionResponse = z
  .object({
    status: z.enum(['Queued', 'Running', 'Succeeded', 'Failed', 'Canceled']),
    properties: z
      .object({
        operation: z.string(),
        created_at: z.string(),
        updated_at: z.string(),
        pending: z.string().describe('number of storage folders still to delete'),
        error: z.string().optional(),
      })
      .describe('details of the long-running operation'),
  })
  .meta({ id: 'DescribeTransactionResponse' });
export type DescribeTransactionResponse = z.infer<typeof DescribeTransactionResponse>;

// ---------------------------------------------------------------------------------------------- data plane

export const CreateTableResponse = z
  .object({
    location: z.string(),
    version: z.number().int().optional().describe('absent for mode ExistOk on an existing table'),
    properties: props,
    name: z.string().optional().describe('new tables only'),
    num_rows: z.number().int().optional().describe('new tables only: rows written'),
    storage_options: z
      .record(z.string(), z.string())
      .optional()
      .describe('vended storage options (credential vending): how the client reaches the table data itself; may carry `expires_at_millis`'),
  })
  .meta({ id: 'CreateTableResponse' });
export type CreateTableResponse = z.infer<typeof CreateTableResponse>;
export const EnterpriseCreateTableResponse = z
  .object({
    name: z.string(),
    location: z.string(),
    version: z.number().int(),
    num_rows: z.number().int(),
    properties: props,
  })
  .meta({ id: 'EnterpriseCreateTableResponse' });
export type EnterpriseCreateTableResponse = z.infer<typeof EnterpriseCreateTableResponse>;
export const InsertIntoTableResponse = z
  .object({ version: z.number().int(), num_inserted_rows: z.number().int() })
  .meta({ id: 'InsertIntoTableResponse' });
export type InsertIntoTableResponse = z.infer<typeof InsertIntoTableResponse>;
export const MergeInsertIntoTableResponse = z
  .object({
    version: z.number().int(),
    num_inserted_rows: z.number().int(),
    num_updated_rows: z.number().int(),
    num_deleted_rows: z.number().int(),
    num_attempts: z.number().int().optional(),
  })
  .meta({ id: 'MergeInsertIntoTableResponse' });
export type MergeInsertIntoTableResponse = z.infer<typeof MergeInsertIntoTableResponse>;
export const CountTableRowsResponse = z.number().int().min(0).describe('the row count as a bare JSON number');
export type CountTableRowsResponse = z.infer<typeof CountTableRowsResponse>;
export const ExplainTableQueryPlanResponse = z.string().describe('the plan, as a JSON string literal');
export type ExplainTableQueryPlanResponse = z.infer<typeof ExplainTableQueryPlanResponse>;
export const UpdateTableResponse = z
  .object({
    updated_rows: z.number().int(),
    rows_updated: z.number().int().describe('same as `updated_rows` (the official remote client reads this name)'),
    version: z.number().int(),
  })
  .meta({ id: 'UpdateTableResponse' });
export type UpdateTableResponse = z.infer<typeof UpdateTableResponse>;
export const DeleteFromTableResponse = z
  .object({ num_deleted_rows: z.number().int(), version: z.number().int() })
  .meta({ id: 'DeleteFromTableResponse' });
export type DeleteFromTableResponse = z.infer<typeof DeleteFromTableResponse>;
export const EmptyResponse = z.object({}).meta({ id: 'EmptyResponse' });
export type EmptyResponse = z.infer<typeof EmptyResponse>;
export const ListTableIndicesResponse = z
  .object({
    indexes: z.array(
      z.object({
        index_name: z.string(),
        index_uuid: z.string(),
        columns: z.array(z.string()),
        index_type: z.string(),
        status: z.string(),
        num_indexed_rows: z.number().int().optional(),
        num_unindexed_rows: z.number().int().optional(),
        size_bytes: z.number().int().optional(),
        num_segments: z.number().int().optional(),
        created_at: z.string().optional(),
        index_version: z.number().int().optional(),
      }),
    ),
  })
  .meta({ id: 'ListTableIndicesResponse' });
export type ListTableIndicesResponse = z.infer<typeof ListTableIndicesResponse>;
export const DescribeTableIndexStatsResponse = z
  .object({
    num_indexed_rows: z.number().int(),
    num_unindexed_rows: z.number().int(),
    index_type: z.string(),
    distance_type: z.string().optional(),
    num_indices: z.number().int().optional(),
  })
  .meta({ id: 'DescribeTableIndexStatsResponse' });
export type DescribeTableIndexStatsResponse = z.infer<typeof DescribeTableIndexStatsResponse>;
export const TableVersion = z
  .object({
    version: z.number().int().min(0),
    manifest_path: z
      .string()
      .describe(
        "the manifest file of this version, as a path on the table's object store (for local storage: the absolute path without its leading `/`)",
      ),
    manifest_size: z.number().int().min(0).optional().describe('size of the manifest file in bytes'),
    e_tag: z.string().optional().describe("the manifest's ETag as the writer reported it (catalog-managed versions)"),
    timestamp_millis: z.number().int().describe('when the version was committed, in milliseconds since the epoch'),
    timestamp: z.string().describe('the same instant in RFC 3339 (what the official remote client reads)'),
    metadata: z.record(z.string(), z.string()),
  })
  .meta({ id: 'TableVersion' });
export type TableVersion = z.infer<typeof TableVersion>;
export const ListTableVersionsResponse = z
  .object({
    versions: z.array(TableVersion).describe('oldest first, or newest first with `descending=true`'),
    page_token: z.string().optional().describe('present when `limit` cut the list short: pass it back as `page_token`'),
  })
  .meta({ id: 'ListTableVersionsResponse' });
export type ListTableVersionsResponse = z.infer<typeof ListTableVersionsResponse>;
export const DescribeTableVersionResponse = z.object({ version: TableVersion }).meta({ id: 'DescribeTableVersionResponse' });
export type DescribeTableVersionResponse = z.infer<typeof DescribeTableVersionResponse>;
export const VersionResponse = z
  .object({ version: z.number().int().describe('the table version after the change') })
  .meta({ id: 'VersionResponse' });
export type VersionResponse = z.infer<typeof VersionResponse>;
