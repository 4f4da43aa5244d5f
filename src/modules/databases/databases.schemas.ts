import { z } from 'zod';
import { GrantSchema, GrantsSchema, type KeyChange, type KeyOptions } from '../identity';
import { cidrProblem, normalizeCidr } from '../../platform/network/client-address';
import { PropertiesSchema } from '../../platform/http/validation/fields';

/** Request and answer schemas of the operator API (databases and their keys): validated by ZodValidationPipe, shown by the OpenAPI document. */
const properties = PropertiesSchema;
const props = PropertiesSchema.describe('string-to-string properties');

// ---------------------------------------------------------------------------------------------- requests

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

/**
 * A database's network rules (docs/access-control.md): source CIDRs (null or []: any) and private-only. On PATCH an
 * absent field is unchanged; `network_rules: null` clears both.
 */
const NetworkRulesBody = z
  .object({
    allowed_cidrs: z
      .array(
        z.string().superRefine((c, ctx) => {
          const problem = cidrProblem(c);
          if (problem) ctx.addIssue({ code: 'custom', message: problem });
        }),
        { error: 'network_rules.allowed_cidrs must be an array of CIDR strings or null' },
      )
      .max(256, { error: 'network_rules.allowed_cidrs: at most 256 entries' })
      .nullable()
      .optional()
      .describe('source addresses its requests may come from, as IPv4/IPv6 CIDRs (a bare address is one host); null or []: any'),
    private_only: z
      .boolean({ error: 'network_rules.private_only must be true or false' })
      .optional()
      .describe('true: answers only under one of PRIVATE_HOST_SUFFIXES (the private endpoints)'),
  })
  .strict()
  .nullable()
  .describe('where requests to it may come from; refused ones get 403 (code 5). The operator key is not subject to them')
  .transform((n) => ({
    allowedCidrs: n === null ? [] : n.allowed_cidrs === undefined ? undefined : [...new Set((n.allowed_cidrs ?? []).map(normalizeCidr))],
    privateOnly: n === null ? false : n.private_only,
  }));

export const CreateDatabaseBody = z.object({
  name: z.string({ error: 'name is required' }).describe('letters, digits, `_`, `-` and `.`'),
  properties: properties.optional().describe('string-to-string properties'),
  rate_limit: RateLimitBody.optional().describe('null or absent: the gateway defaults'),
  storage_profile: z
    .string()
    .min(1)
    .max(64)
    .optional()
    .describe("the storage profile (STORAGE_PROFILES) its tables live in; absent: 'default'"),
  managed_versioning: z
    .boolean()
    .optional()
    .describe(
      'catalog-managed versions: every commit of its tables goes through CreateTableVersion and the catalog decides the latest version; absent: false',
    ),
  quotas: QuotasBody.optional(),
  network_rules: NetworkRulesBody.optional(),
});
export const UpdateDatabaseBody = z
  .object({
    properties: properties.optional().describe('string-to-string properties'),
    rate_limit: RateLimitBody.optional().describe('null: back to the gateway defaults'),
    storage_profile: z.string().min(1).max(64).optional().describe('a different storage profile; only while the database holds no tables'),
    managed_versioning: z
      .boolean()
      .optional()
      .describe('turns catalog-managed versions on or off; only while the database holds no tables'),
    quotas: QuotasBody.optional(),
    drop_profile: z
      .enum(['hard', 'soft'], { error: "drop_profile must be 'hard', 'soft' or null" })
      .nullable()
      .optional()
      .describe(
        "what a table drop does: 'hard' deletes its data at once, 'soft' keeps it for drop_retention_seconds (undrop); null: the server's DROP_PROFILE",
      ),
    drop_retention_seconds: z
      .number()
      .int()
      .min(1)
      .max(10 * 365 * 24 * 3600)
      .nullable()
      .optional()
      .describe("how long a soft-dropped table is kept before it is purged; null: the server's DROP_RETENTION_SECONDS"),
    protected: z.boolean().optional().describe('true: deleting the database is refused (409) until the flag is cleared'),
    network_rules: NetworkRulesBody.optional(),
  })
  .refine(
    (b) =>
      b.properties !== undefined ||
      b.rate_limit !== undefined ||
      b.storage_profile !== undefined ||
      b.managed_versioning !== undefined ||
      b.quotas !== undefined ||
      b.drop_profile !== undefined ||
      b.drop_retention_seconds !== undefined ||
      b.protected !== undefined ||
      b.network_rules !== undefined,
    {
      error:
        'nothing to change: send properties, rate_limit, storage_profile, managed_versioning, quotas, drop_profile, drop_retention_seconds, protected and/or network_rules',
    },
  );
/** A key's own limit, inside its database's: both must have room for a request. */
const KeyRateLimitBody = z
  .object({
    limit: z.number().int().positive({ error: 'rate_limit.limit must be a positive integer' }),
    window_ms: z.number().int().positive({ error: 'rate_limit.window_ms must be a positive integer' }).max(86_400_000),
  })
  .strict()
  .describe("at most `limit` requests per `window_ms` for this key, inside the database's own limit")
  .nullable()
  .transform((v) => (v ? { limit: v.limit, windowMs: v.window_ms } : null));
const keyText = (what: string) =>
  z
    .string({ error: `${what} must be a string or null` })
    .min(1, { error: `${what} must not be empty (null clears it)` })
    .max(200, { error: `${what} must be at most 200 characters` });
const expiresAt = z.iso.datetime({ offset: true, error: 'expires_at must be an RFC 3339 date-time' });

export const CreateKeyBody = z.object({
  role: z.enum(['read', 'write', 'admin'], { error: "role must be 'read', 'write' or 'admin'" }),
  description: z.string().max(500).optional(),
  expires_at: expiresAt.optional().describe('when the key stops working; absent: never'),
  name: keyText('name').nullable().optional().describe('free text naming the key (what it is for)'),
  owner: keyText('owner').nullable().optional().describe('free text: who holds the key'),
  rate_limit: KeyRateLimitBody.optional().describe("null or absent: only the database's limit"),
  grants: GrantsSchema.nullable()
    .optional()
    .describe('narrows the role to these privileges and objects (docs/access-control.md); null or absent: the role on the whole database'),
});
export const UpdateKeyBody = z
  .object({
    name: keyText('name').nullable().optional().describe('null clears it'),
    owner: keyText('owner').nullable().optional().describe('null clears it'),
    expires_at: expiresAt.nullable().optional().describe('null: never expires'),
    rate_limit: KeyRateLimitBody.optional().describe("null: only the database's limit"),
    grants: GrantsSchema.nullable().optional().describe('replaces the grants; null: the role on the whole database'),
  })
  .strict()
  .refine(
    (b) =>
      b.name !== undefined || b.owner !== undefined || b.expires_at !== undefined || b.rate_limit !== undefined || b.grants !== undefined,
    { error: 'nothing to change: send name, owner, expires_at, rate_limit and/or grants' },
  );
/** What a new key is issued with, from the create body (the operator API's and the CLI's). */
export const keyOptionsOf = (body: z.output<typeof CreateKeyBody>): KeyOptions => ({
  description: body.description,
  expiresAt: body.expires_at ? new Date(body.expires_at) : undefined,
  name: body.name,
  owner: body.owner,
  rateLimit: body.rate_limit,
  grants: body.grants,
});

/** What a key's edit changes, from the PATCH body (the operator API's and the CLI's). */
export const keyChangeOf = (body: z.output<typeof UpdateKeyBody>): KeyChange => ({
  name: body.name,
  owner: body.owner,
  expiresAt: body.expires_at === undefined ? undefined : body.expires_at === null ? null : new Date(body.expires_at),
  rateLimit: body.rate_limit,
  grants: body.grants,
});

export const RotateKeyBody = z
  .object({
    overlap_seconds: z
      .number()
      .int({ error: 'overlap_seconds must be an integer' })
      .min(0, { error: 'overlap_seconds must be >= 0' })
      .max(365 * 24 * 3600, { error: 'overlap_seconds must be at most a year' })
      .optional()
      .describe('the old key then expires this many seconds from now (unless it expires sooner); absent: it stays valid until revoked'),
  })
  .strict();

// ---------------------------------------------------------------------------------------------- answers

const RateLimit = z
  .object({
    limit: z.number().int().positive(),
    window_ms: z.number().int().positive().max(86_400_000),
  })
  .describe('at most `limit` requests per `window_ms` for the whole database');

export const Database = z
  .object({
    id: z.string(),
    name: z.string(),
    properties: props,
    rate_limit: RateLimit.nullable().describe("the database's own limit; null when the gateway defaults apply"),
    storage_profile: z.string().describe('the storage profile its tables live in'),
    managed_versioning: z.boolean().describe("whether its tables' versions are managed by the catalog (CreateTableVersion)"),
    storage_root: z.string().describe("where its tables live (the profile's root and the database folder; never options or secrets)"),
    quotas: z
      .object({
        max_tables: z.number().int().nullable(),
        max_namespaces: z.number().int().nullable(),
        max_storage_bytes: z.number().int().nullable(),
        max_rows_per_write: z.number().int().nullable(),
      })
      .describe("the quotas in force (its own, else the gateway's defaults); null: no limit"),
    drop_profile: z
      .object({
        profile: z.enum(['hard', 'soft']),
        retention_seconds: z.number().int(),
        source: z.object({ profile: z.enum(['database', 'server']), retention_seconds: z.enum(['database', 'server']) }),
      })
      .optional()
      .describe("what a table drop does (docs/soft-delete.md), and whether each setting is the database's own or the server's"),
    protected: z.boolean().optional().describe('deleting the database is refused while true'),
    network_rules: z
      .object({
        allowed_cidrs: z.array(z.string()).describe('source CIDRs its requests may come from; []: any'),
        private_only: z.boolean().describe('whether it answers only under PRIVATE_HOST_SUFFIXES'),
      })
      .optional()
      .describe('where requests to it may come from (docs/access-control.md)'),
    created_at: z.string(),
  })
  .meta({ id: 'Database' });
export type Database = z.infer<typeof Database>;
export const ListDatabasesResponse = z
  .object({ databases: z.array(Database), page_token: z.string().optional() })
  .meta({ id: 'ListDatabasesResponse' });
export type ListDatabasesResponse = z.infer<typeof ListDatabasesResponse>;
const KeyRateLimit = z
  .object({ limit: z.number().int().positive(), window_ms: z.number().int().positive() })
  .nullable()
  .describe("the key's own limit inside its database's; null: only the database's");
const keyFields = {
  name: z.string().nullable().describe('free text; null on keys made before names existed'),
  owner: z.string().nullable().describe('free text: who holds the key'),
  rate_limit: KeyRateLimit,
  rotated_from: z.string().nullable().describe('the id of the key this one replaced (rotation); null otherwise'),
  grants: z
    .array(GrantSchema)
    .nullable()
    .describe('what the key may do where (docs/access-control.md); null: its role on the whole database'),
};
export const IssuedApiKey = z
  .object({
    id: z.string(),
    api_key: z.string().describe('the secret: shown only in this answer'),
    role: z.enum(['read', 'write', 'admin']),
    description: z.string().nullable(),
    created_at: z.string(),
    expires_at: z.string().nullable(),
    ...keyFields,
  })
  .meta({ id: 'IssuedApiKey' });
export type IssuedApiKey = z.infer<typeof IssuedApiKey>;
export const ApiKey = z
  .object({
    id: z.string(),
    role: z.enum(['read', 'write', 'admin']),
    description: z.string().nullable(),
    created_at: z.string(),
    expires_at: z.string().nullable(),
    revoked_at: z.string().nullable(),
    ...keyFields,
    last_used_at: z
      .string()
      .nullable()
      .describe('when the key was last used (coarse: up to KEY_USAGE_FLUSH_MS late); null: not since this was recorded'),
  })
  .meta({ id: 'ApiKey' });
export type ApiKey = z.infer<typeof ApiKey>;
export const ListApiKeysResponse = z.object({ api_keys: z.array(ApiKey) }).meta({ id: 'ListApiKeysResponse' });
export type ListApiKeysResponse = z.infer<typeof ListApiKeysResponse>;
