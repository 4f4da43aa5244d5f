import { z } from 'zod';
import { Errors } from './errors';

/**
 * Request-body schemas of the REST contract (zod), and the one helper that applies them. Bodies may be absent,
 * empty or JSON `null` (the official clients send `null` on some routes): those read as `{}`. A field sent as
 * `null` counts as not sent, as in the spec's client models. Unknown fields are ignored, as the spec's clients send
 * more than each route reads.
 */
const properties = z.record(z.string(), z.string(), { error: 'properties must map strings to strings' });
const identity = z.object({ api_key: z.string().nullish(), auth_token: z.string().nullish() }).loose().nullish();
const context = z.record(z.string(), z.string()).nullish();
const idArray = z.array(z.string()).nullish();

const base = { id: idArray, identity, context };

/** Case-insensitive, PascalCase or snake_case (`ExistOk`, `exist_ok`, `EXISTOK`). */
export function modeOf<T extends string>(allowed: readonly T[], field: string, def: T) {
  return z
    .string()
    .nullish()
    .transform((v, ctx): T => {
      if (v === undefined || v === null) return def;
      const norm = v.toLowerCase().replace(/_/g, '');
      const hit = allowed.find((a) => a === norm);
      if (!hit) {
        ctx.addIssue({ code: 'custom', message: `unsupported ${field} '${v}'; expected one of ${allowed.join(', ')}` });
        return z.NEVER;
      }
      return hit;
    });
}

export const CreateNamespaceBody = z
  .object({ ...base, mode: modeOf(['create', 'existok', 'overwrite'] as const, 'mode', 'create'), properties: properties.nullish().transform((v) => v ?? undefined) })
  .loose();
export const DropNamespaceBody = z
  .object({
    ...base,
    mode: modeOf(['fail', 'skip'] as const, 'mode', 'fail'),
    behavior: modeOf(['restrict', 'cascade'] as const, 'behavior', 'restrict'),
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
    mode: modeOf(['create', 'overwrite'] as const, 'mode', 'create'),
    properties: properties.nullish().transform((v) => v ?? undefined),
  })
  .loose();
export const DescribeTableBody = z
  .object({
    ...base,
    version: z.number().int().nonnegative().nullable().optional(),
    branch: z.string().nullable().optional(),
    with_table_uri: z.boolean().nullish(),
    load_detailed_metadata: z.boolean().nullish(),
    check_declared: z.boolean().nullish(),
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

export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const value = body === undefined || body === null || body === '' ? {} : body;
  if (typeof value !== 'object' || Array.isArray(value)) throw Errors.invalidInput('request body must be a JSON object');
  const r = schema.safeParse(value);
  if (!r.success) {
    throw Errors.invalidInput(
      r.error.issues.map((i) => (i.path.length ? `${i.path.join('.')}: ${i.message}` : i.message)).join('; '),
    );
  }
  return r.data;
}

export const PropertiesSchema = properties;
