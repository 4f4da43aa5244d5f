import { z } from 'zod';

/**
 * The field rules requests share, written once as zod schemas: the validation pipe applies them and the OpenAPI
 * document shows them, from the same schema. Query strings arrive as text, or as a list when a parameter repeats:
 * query rules take the last value and read an empty one as absent. Issue messages leave out the field's name; the
 * pipe puts the path in front (`limit: must be an integer, got 'x'`).
 */

/** String-to-string properties (of a namespace, a table, a database). */
export const PropertiesSchema = z.record(z.string(), z.string(), { error: 'properties must map strings to strings' });

/** The last of a repeated query parameter; empty (or null) counts as absent. */
function lastValue(raw: unknown): unknown {
  const v = Array.isArray(raw) ? raw[raw.length - 1] : raw;
  return v === '' || v === null ? undefined : v;
}

/** A query parameter read by `schema`: the last of repeated values, empty = absent. */
export const queryParam = <S extends z.ZodType>(schema: S) => z.preprocess(lastValue, schema);

/** Optional text in a query string. */
export const queryText = () => queryParam(z.string().optional());

/**
 * The boolean rule of query strings: `true`/`false` in any case, or `1`/`0` (what the official remote client and
 * the reference send); absent → `def` (or undefined without one); anything else is a 400.
 */
export function flag(def: boolean): z.ZodPreprocess<z.ZodDefault<z.ZodBoolean>>;
export function flag(): z.ZodPreprocess<z.ZodOptional<z.ZodBoolean>>;
export function flag(def?: boolean): z.ZodPreprocess<z.ZodDefault<z.ZodBoolean> | z.ZodOptional<z.ZodBoolean>> {
  return z.preprocess(
    (raw, ctx) => {
      const v = lastValue(raw);
      if (v === undefined || typeof v === 'boolean') return v;
      const s = String(v).toLowerCase();
      if (s === 'true' || s === '1') return true;
      if (s === 'false' || s === '0') return false;
      ctx.addIssue({ code: 'custom', message: `must be true or false, got '${String(v)}'` });
      return z.NEVER;
    },
    def === undefined ? z.boolean().optional() : z.boolean().default(def),
  );
}

/** Reads an integer from a query string (a JSON number is taken as is); absent → undefined. */
function integerOf(raw: unknown, ctx: z.RefinementCtx): number | undefined {
  const v = lastValue(raw);
  if (v === undefined) return undefined;
  const n = typeof v === 'number' ? v : Number(v);
  if (!Number.isInteger(n)) {
    ctx.addIssue({ code: 'custom', message: `must be an integer, got '${String(v)}'` });
    return z.NEVER;
  }
  return n;
}

/** A non-negative integer in a query string (a table version, …). */
export const queryInt = () => z.preprocess(integerOf, z.number().int().min(0).optional());

/**
 * The limit rule of every list: an integer; absent or negative (the reference ignores a negative limit) →
 * undefined, which the list reads as LIST_DEFAULT_LIMIT; above LIST_MAX_LIMIT it is capped (pageLimit, pagination.ts).
 */
export const limit = z
  .preprocess((raw, ctx) => {
    const n = integerOf(raw, ctx);
    return n !== undefined && n < 0 ? undefined : n;
  }, z.number().int().min(0).optional())
  .describe('Largest number of items in the answer; default LIST_DEFAULT_LIMIT, capped at LIST_MAX_LIMIT.');

/** An opaque page token as answered by the previous page (decoded by the list itself, see pagination.ts). */
export const pageToken = queryParam(z.string({ error: 'must be a string' }).optional()).describe(
  "Opaque token from the previous page's answer (start after it).",
);

/** The paging parameters of every list. */
export const PageQuery = z.object({ page_token: pageToken, limit });
export type PageRequest = z.output<typeof PageQuery>;

type Squash<S extends string> = S extends `${infer A}_${infer B}` ? Squash<`${A}${B}`> : S;
/** How a mode is compared and handed on: lower case, without underscores (`ExistOk`, `exist_ok` → `existok`). */
export type ModeValue<V extends string> = Lowercase<Squash<V>>;
const squash = <V extends string>(v: V) => v.toLowerCase().replace(/_/g, '') as ModeValue<V>;

/**
 * The rule of enumerated modes (`mode`, `behavior`), in bodies and query strings alike: case-insensitive,
 * PascalCase or snake_case (`ExistOk`, `exist_ok`, `EXISTOK`); absent or null → `def`. `values` are spelled as the
 * spec writes them; the result is their squashed form (ModeValue).
 */
export function mode<const V extends string>(values: readonly V[], def: NoInfer<V>) {
  return z
    .string()
    .nullish()
    .transform((v, ctx): ModeValue<V> => {
      if (v === undefined || v === null) return squash(def);
      const hit = values.find((a) => squash(a) === squash(v));
      if (hit === undefined) {
        ctx.addIssue({ code: 'custom', message: `unsupported value '${v}'; expected one of ${values.join(', ')}` });
        return z.NEVER;
      }
      return squash(hit);
    })
    .describe(`One of ${values.map((x) => `\`${x}\``).join(', ')} (default \`${def}\`); case-insensitive, PascalCase or snake_case.`);
}

/** A query parameter holding one JSON-encoded object of strings (e.g. table properties). */
export const queryJsonStringMap = () =>
  queryText().transform((v, ctx): Record<string, string> | undefined => {
    if (v === undefined) return undefined;
    try {
      const o: unknown = JSON.parse(v);
      if (o && typeof o === 'object' && !Array.isArray(o) && Object.values(o).every((x) => typeof x === 'string')) {
        return o as Record<string, string>;
      }
    } catch {
      /* reported below */
    }
    ctx.addIssue({ code: 'custom', message: 'must be a JSON object of strings' });
    return z.NEVER;
  });

/** A query parameter that may repeat (`on=a&on=b`), read as a list of non-empty strings. */
export const queryList = (whenEmpty: string) =>
  z.preprocess(
    (raw) => (Array.isArray(raw) ? raw : [raw]).filter((v): v is string => typeof v === 'string' && v.length > 0),
    z.array(z.string()).min(1, whenEmpty),
  );

/**
 * The id rule: ids the gateway makes (API keys, transactions, audit events) are UUIDs. Something else can name
 * none of them, so the callers answer "not found" without asking the catalog (a UUID column would reject it).
 */
export const uuid = z.guid();
export const isUuid = (v: unknown): v is string => uuid.safeParse(v).success;
