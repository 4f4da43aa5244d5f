import { z } from 'zod';
import { flag, limit, mode, pageToken, queryInt, queryJsonStringMap, queryList, queryParam, queryText } from '../../platform/http/validation/fields';

/**
 * Request bodies of the data plane, in both dialects: the official remote client's (bare `vector` / `columns`,
 * legacy or structured FTS) and the Lance Namespace spec's (`vector: {single_vector|multi_vector}`,
 * `columns: {column_names|column_aliases}`, `full_text_query: {string_query|structured_query}`). Unknown fields are
 * ignored; `null` means absent.
 */
const base = { id: z.array(z.string()).nullish(), identity: z.unknown().optional(), context: z.unknown().optional() };
const optNum = z.number().nullish().transform((v) => v ?? undefined);
const optInt = z.number().int().nonnegative().nullish().transform((v) => v ?? undefined);
const optStr = z.string().nullish().transform((v) => v ?? undefined);
const optBool = z.boolean().nullish().transform((v) => v ?? undefined);
/** The branch a data operation targets; absent, `""` or `"main"` = main. */
const branch = optStr.describe('Branch to target; absent, `""` or `"main"` = main.');
/** The same in a query string (writes whose body is Arrow, and bodyless operations). */
const branchParam = () => queryText().describe('Branch to target; absent, empty or `main` = main.');

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

export const CountRowsBody = z.object({ ...base, predicate: optStr, filter: optStr, version: optInt, branch }).loose();

export const UpdateBody = z
  .object({
    ...base,
    updates: z.array(z.array(z.string())).min(1, 'update requires at least one [column, expression] pair'),
    predicate: optStr,
    branch,
  })
  .loose();

export const DeleteBody = z.object({ ...base, predicate: z.string({ error: 'predicate is required' }), branch }).loose();

export const CreateIndexBody = z
  .object({
    ...base,
    column: z.string({ error: 'column is required' }).min(1),
    index_type: z.string({ error: 'index_type is required' }),
    name: optStr,
    replace: optBool,
    metric_type: optStr,
    distance_type: optStr,
    num_partitions: optInt,
    num_sub_vectors: optInt,
    num_bits: optInt,
    sample_rate: optInt,
    max_iterations: optInt,
    m: optInt,
    ef_construction: optInt,
    with_position: optBool,
    base_tokenizer: optStr,
    language: optStr,
    max_token_length: optInt,
    lower_case: optBool,
    stem: optBool,
    remove_stop_words: optBool,
    ascii_folding: optBool,
    custom_stop_words: z.array(z.string()).nullish(),
    ngram_min_length: optInt,
    ngram_max_length: optInt,
    prefix_only: optBool,
    branch,
  })
  .loose();
export type CreateIndexRequest = z.output<typeof CreateIndexBody>;

export const VersionBody = z.object({ ...base, version: optInt, branch }).loose();

export const AddColumnsBody = z
  .object({
    ...base,
    new_columns: z
      .array(
        z
          .object({
            name: z.string(),
            expression: optStr.describe('SQL evaluated once over the existing rows'),
            computed: optStr.describe('SQL kept as the column\'s definition: the column is added empty and filled by backfill_column'),
          })
          .loose()
          .refine((c) => (c.expression === undefined) !== (c.computed === undefined), {
            message: 'new_columns[] needs exactly one of expression and computed',
          }),
      )
      .min(1, 'new_columns must not be empty')
      .refine((cs) => cs.every((c) => c.computed === undefined) || cs.every((c) => c.computed !== undefined), {
        message: 'new_columns must be all expression columns or all computed columns',
      }),
    branch,
  })
  .loose();

export const AlterColumnsBody = z
  .object({
    ...base,
    alterations: z
      .array(
        z
          .object({
            path: z.string(),
            rename: optStr,
            nullable: optBool,
            data_type: z.object({ type: z.string() }).loose().nullish(),
          })
          .loose(),
      )
      .min(1, 'alterations must not be empty'),
    branch,
  })
  .loose();

export const DropColumnsBody = z.object({ ...base, columns: z.array(z.string()).min(1, 'columns must not be empty'), branch }).loose();

export const ExplainBody = z
  .object({ ...base, verbose: optBool, query: QueryBody.nullish().transform((q) => q ?? QueryBody.parse({})), branch })
  .loose();

// ---------------------------------------------------------------------------------------------- query strings

export const CreateTableQuery = z.object({
  mode: queryParam(mode(['create', 'exist_ok', 'overwrite'], 'create')),
  properties: queryJsonStringMap().describe('Table properties as one JSON-encoded object of strings.'),
});

export const InsertQuery = z.object({
  mode: queryParam(mode(['append', 'overwrite'], 'append')),
  branch: branchParam(),
  upload_id: queryText().describe('A multipart write (from multipart_write/create): the body is staged as one part, committed at complete.'),
  upload_part_id: queryText().describe('The part\'s id within the multipart write (sending a part again replaces it).'),
});

/** multipart_write/create takes the branch; complete and abort name the upload. */
export const UploadQuery = z.object({
  upload_id: queryParam(z.string({ error: 'upload_id is required' }).min(1, 'upload_id is required')).describe('The id multipart_write/create answered.'),
  branch: branchParam(),
});

export const MergeInsertQuery = z.object({
  on: queryList("merge_insert requires the 'on' query parameter").describe(
    'Key column(s) to match on; repeat (`on=a&on=b`) for a composite key.',
  ),
  when_matched_update_all: flag(false).describe('Update matched rows.'),
  when_matched_update_all_filt: queryText().describe('Update matched rows that satisfy this SQL condition.'),
  when_not_matched_insert_all: flag(false).describe('Insert rows without a match.'),
  when_not_matched_by_source_delete: flag(false).describe('Delete target rows the source does not have.'),
  when_not_matched_by_source_delete_filt: queryText().describe('Delete such rows that satisfy this SQL condition.'),
  use_index: flag(true).describe('Use an index on the key columns (default true).'),
  branch: branchParam(),
});

export const CountRowsQuery = z.object({
  predicate: queryText().describe('SQL filter: count only matching rows.'),
  version: queryInt().describe('Table version to count.'),
  branch: branchParam(),
});

/** DropTableIndex: the spec's binding takes the branch from the query. */
export const BranchQuery = z.object({ branch: branchParam() });

/** ListTableVersions takes no body in the REST binding: everything is in the query. */
export const ListVersionsQuery = z.object({
  branch: branchParam(),
  descending: flag().describe('Newest first (otherwise oldest first).'),
  page_token: pageToken,
  limit: limit.describe('Largest number of versions in the answer; all of them when absent, capped at LIST_MAX_LIMIT.'),
});

/** DescribeTableVersion: `version` absent = the latest. */
export const DescribeVersionBody = z.object({ ...base, version: optInt, branch }).loose();

/** AlterTableBackfillColumns: the computed column to fill (the spec's tuning fields are accepted and not needed). */
export const BackfillColumnBody = z
  .object({
    ...base,
    column: z.string({ error: 'column is required' }).min(1, 'column must not be empty'),
    where: optStr,
    branch,
  })
  .loose();
