import { z } from 'zod';
import { flag, mode, PageQuery, queryText } from '../../platform/http/validation/fields';

/**
 * Request schemas of the catalog routes and the operator API (zod), applied by ZodValidationPipe (@ValidBody,
 * @ValidQuery) and shown by the OpenAPI document. A body field sent as `null` counts as not sent, as in the spec's
 * client models. Unknown fields are ignored, as the spec's clients send more than each route reads.
 */
const properties = z.record(z.string(), z.string(), { error: 'properties must map strings to strings' });
const identity = z.object({ api_key: z.string().nullish(), auth_token: z.string().nullish() }).loose().nullish();
const context = z.record(z.string(), z.string()).nullish();
const idArray = z.array(z.string()).nullish();

const base = { id: idArray, identity, context };

export const CreateNamespaceBody = z
  .object({ ...base, mode: mode(['Create', 'ExistOk', 'Overwrite'], 'Create'), properties: properties.nullish().transform((v) => v ?? undefined) })
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
  .object({ ...base, location: z.string().nullish().transform((v) => v ?? undefined), properties: properties.nullish().transform((v) => v ?? undefined), vend_credentials: z.boolean().nullish() })
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

export const PropertiesSchema = properties;

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

// ---------------------------------------------------------------------------------------------- operator API

/** `{limit, window_ms}`: at most `limit` requests per `window_ms` for the whole database; null → the defaults. */
const RateLimitBody = z
  .object({
    limit: z.number().int().positive({ error: 'rate_limit.limit must be a positive integer' }),
    window_ms: z.number().int().positive({ error: 'rate_limit.window_ms must be a positive integer' }).max(86_400_000),
  })
  .describe('at most `limit` requests per `window_ms` for the whole database')
  .nullable()
  .transform((v) => (v ? { limit: v.limit, windowMs: v.window_ms } : null));

const quotaLimit = (what: string) =>
  z
    .number({ error: `quotas.${what} must be a number or null` })
    .int({ error: `quotas.${what} must be an integer` })
    .min(0, { error: `quotas.${what} must be >= 0` })
    .max(Number.MAX_SAFE_INTEGER)
    .nullable()
    .optional()
    .describe(`null: the gateway's default (QUOTA_${what.toUpperCase()}); absent: unchanged`);

/** A database's quotas; each null → the gateway's default, absent → unchanged (on PATCH). */
const QuotasBody = z
  .object({
    max_tables: quotaLimit('max_tables'),
    max_namespaces: quotaLimit('max_namespaces'),
    max_storage_bytes: quotaLimit('max_storage_bytes'),
    max_rows_per_write: quotaLimit('max_rows_per_write'),
  })
  .strict()
  .describe('tables, namespaces, storage bytes and rows per write the database may have; past one, a 403 (code 15)')
  .transform((q) => ({
    maxTables: q.max_tables,
    maxNamespaces: q.max_namespaces,
    maxStorageBytes: q.max_storage_bytes,
    maxRowsPerWrite: q.max_rows_per_write,
  }));

export const CreateDatabaseBody = z.object({
  name: z.string({ error: 'name is required' }).describe('letters, digits, `_`, `-` and `.`'),
  properties: properties.optional().describe('string-to-string properties'),
  rate_limit: RateLimitBody.optional().describe('null or absent: the gateway defaults'),
  storage_profile: z.string().min(1).max(64).optional().describe("the storage profile (STORAGE_PROFILES) its tables live in; absent: 'default'"),
  managed_versioning: z
    .boolean()
    .optional()
    .describe('catalog-managed versions: every commit of its tables goes through CreateTableVersion and the catalog decides the latest version; absent: false'),
  quotas: QuotasBody.optional(),
});
export const UpdateDatabaseBody = z
  .object({
    properties: properties.optional().describe('string-to-string properties'),
    rate_limit: RateLimitBody.optional().describe('null: back to the gateway defaults'),
    storage_profile: z.string().min(1).max(64).optional().describe('a different storage profile; only while the database holds no tables'),
    managed_versioning: z.boolean().optional().describe('turns catalog-managed versions on or off; only while the database holds no tables'),
    quotas: QuotasBody.optional(),
    drop_profile: z.enum(['hard', 'soft'], { error: "drop_profile must be 'hard', 'soft' or null" }).nullable().optional()
      .describe("what a table drop does: 'hard' deletes its data at once, 'soft' keeps it for drop_retention_seconds (undrop); null: the server's DROP_PROFILE"),
    drop_retention_seconds: z.number().int().min(1).max(10 * 365 * 24 * 3600).nullable().optional()
      .describe("how long a soft-dropped table is kept before it is purged; null: the server's DROP_RETENTION_SECONDS"),
    protected: z.boolean().optional().describe('true: deleting the database is refused (409) until the flag is cleared'),
  })
  .refine((b) => b.properties !== undefined || b.rate_limit !== undefined || b.storage_profile !== undefined || b.managed_versioning !== undefined || b.quotas !== undefined || b.drop_profile !== undefined || b.drop_retention_seconds !== undefined || b.protected !== undefined, {
    error: 'nothing to change: send properties, rate_limit, storage_profile, managed_versioning, quotas, drop_profile, drop_retention_seconds and/or protected',
  });
export const CreateKeyBody = z.object({
  role: z.enum(['read', 'write', 'admin'], { error: "role must be 'read', 'write' or 'admin'" }),
  description: z.string().max(500).optional(),
  expires_at: z.iso.datetime({ offset: true, error: 'expires_at must be an RFC 3339 date-time' }).optional(),
});
