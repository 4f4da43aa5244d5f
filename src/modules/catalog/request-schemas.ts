import { z } from 'zod';
import { flag, mode, PageQuery, PropertiesSchema, queryText } from '../../platform/http/validation/fields';

/**
 * Request schemas of the catalog routes (zod), applied by ZodValidationPipe (@ValidBody, @ValidQuery) and shown by
 * the OpenAPI document. A body field sent as `null` counts as not sent, as in the spec's client models. Unknown fields are ignored, as the spec's clients send more than each route reads.
 */
const properties = PropertiesSchema;
const identity = z.object({ api_key: z.string().nullish(), auth_token: z.string().nullish() }).loose().nullish();
const context = z.record(z.string(), z.string()).nullish();
const idArray = z.array(z.string()).nullish();

const base = { id: idArray, identity, context };

export const CreateNamespaceBody = z
  .object({
    ...base,
    mode: mode(['Create', 'ExistOk', 'Overwrite'], 'Create'),
    properties: properties.nullish().transform((v) => v ?? undefined),
  })
  .loose();
export const DropNamespaceBody = z
  .object({
    ...base,
    mode: mode(['Fail', 'Skip'], 'Fail'),
    behavior: mode(['Restrict', 'Cascade'], 'Restrict'),
  })
  .loose();
export const IdOnlyBody = z.object(base).loose();
export const DeclareTableBody = z
  .object({
    ...base,
    location: z
      .string()
      .nullish()
      .transform((v) => v ?? undefined),
    properties: properties.nullish().transform((v) => v ?? undefined),
    vend_credentials: z.boolean().nullish(),
  })
  .loose();
export const RegisterTableBody = z
  .object({
    ...base,
    location: z.string({ error: 'location is required' }).min(1, 'location must not be empty'),
    mode: mode(['Create', 'Overwrite'], 'Create'),
    properties: properties.nullish().transform((v) => v ?? undefined),
  })
  .loose();
export const DescribeTableBody = z
  .object({
    ...base,
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
    ...base,
    new_table_name: z.string({ error: 'new_table_name is required' }),
    new_namespace_id: z.array(z.string()).nullable().optional(),
    /** The official remote client's name for new_namespace_id. */
    new_namespace: z.array(z.string()).nullable().optional(),
  })
  .loose();
export const StatsBody = z.object({ ...base, branch: z.string().nullable().optional() }).loose();

// ---------------------------------------------------------------------------------------------- query strings

export const ListNamespacesQuery = PageQuery;
export const ListTablesQuery = PageQuery.extend({
  include_declared: flag(true).describe('Include declared tables that have no data yet (default true).'),
});
/** DescribeTable: a query parameter overrides the body field of the same name. */
export const DescribeTableQuery = z.object({
  with_table_uri: flag().describe('Include `table_uri` (always included by this gateway).'),
  load_detailed_metadata: flag().describe('Also report `is_only_declared`.'),
  check_declared: flag().describe('Report `is_only_declared`.'),
});
export const StatsQuery = z.object({ branch: queryText().describe('Branch to read (on POST, when the body names none).') });
