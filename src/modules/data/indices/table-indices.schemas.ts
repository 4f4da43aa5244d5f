import { z } from 'zod';
import { base, branch, optBool, optInt, optStr } from '../dataplane.schemas';

/** CreateTableIndex (and CreateTableScalarIndex), in both dialects: every index type's tuning fields. */
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

/** The answers of ListTableIndices and DescribeTableIndexStats. */
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
