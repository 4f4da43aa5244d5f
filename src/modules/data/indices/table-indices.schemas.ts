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
