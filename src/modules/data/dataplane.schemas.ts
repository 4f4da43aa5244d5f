import { z } from 'zod';
import { queryText } from '../../platform/http/validation/fields';

/**
 * What the request bodies of the data plane share, in both dialects: the official remote client's and the Lance
 * Namespace spec's (each feature folder's *.schemas.ts holds its own bodies). Unknown fields are ignored; `null`
 * means absent.
 */
export const base = { id: z.array(z.string()).nullish(), identity: z.unknown().optional(), context: z.unknown().optional() };
export const optNum = z
  .number()
  .nullish()
  .transform((v) => v ?? undefined);
export const optInt = z
  .number()
  .int()
  .nonnegative()
  .nullish()
  .transform((v) => v ?? undefined);
export const optStr = z
  .string()
  .nullish()
  .transform((v) => v ?? undefined);
export const optBool = z
  .boolean()
  .nullish()
  .transform((v) => v ?? undefined);
/** The branch a data operation targets; absent, `""` or `"main"` = main. */
export const branch = optStr.describe('Branch to target; absent, `""` or `"main"` = main.');
/** The same in a query string (writes whose body is Arrow, and bodyless operations). */
export const branchParam = () => queryText().describe('Branch to target; absent, empty or `main` = main.');

/**
 * A query (QueryTable, inside Explain- and AnalyzeTableQueryPlan, and what the query planner reads), in both dialects:
 * the official remote client's (bare `vector` / `columns`, legacy or structured FTS) and the Lance Namespace spec's
 * (`vector: {single_vector|multi_vector}`, `columns: {column_names|column_aliases}`,
 * `full_text_query: {string_query|structured_query}`).
 */
const vectorList = z.array(z.number());
const vectorBody = z
  .union([
    vectorList,
    z.array(vectorList),
    z.object({ single_vector: vectorList.nullish(), multi_vector: z.array(vectorList).nullish() }).loose(),
  ])
  .nullish();

const columnsBody = z
  .union([
    z.array(z.string()),
    z.record(z.string(), z.string()),
    z.object({ column_names: z.array(z.string()).nullish(), column_aliases: z.record(z.string(), z.string()).nullish() }).loose(),
  ])
  .nullish();

export const QueryBody = z
  .object({
    ...base,
    vector: vectorBody,
    k: z.number().nonnegative().nullish(),
    filter: optStr,
    columns: columnsBody,
    full_text_query: z.record(z.string(), z.unknown()).nullish(),
    vector_column: optStr,
    distance_type: optStr,
    prefilter: optBool,
    bypass_vector_index: optBool,
    fast_search: optBool,
    with_row_id: optBool,
    nprobes: optInt,
    minimum_nprobes: optInt,
    maximum_nprobes: optInt,
    ef: optInt,
    refine_factor: optInt,
    lower_bound: optNum,
    upper_bound: optNum,
    offset: optInt,
    version: optInt,
    branch,
  })
  .loose();
export type QueryRequest = z.output<typeof QueryBody>;

/** A version of a branch (index list and stats, restore). */
export const VersionBody = z.object({ ...base, version: optInt, branch }).loose();

/** DropTableIndex, multipart writes and tags: the spec's binding takes the branch from the query. */
export const BranchQuery = z.object({ branch: branchParam() });

/** The answer with nothing to say (index, tag and multipart operations). */
export const EmptyResponse = z.object({}).meta({ id: 'EmptyResponse' });
export type EmptyResponse = z.infer<typeof EmptyResponse>;
