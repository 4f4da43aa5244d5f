import { z } from 'zod';
import { queryInt, queryText } from '../../../platform/http/validation/fields';
import { base, branch, branchParam, optBool, optInt, optStr, QueryBody } from '../dataplane.schemas';

/** CountTableRows (POST body, GET query) and ExplainTableQueryPlan: bodies, query and answers. */
export const CountRowsBody = z.object({ ...base, predicate: optStr, filter: optStr, version: optInt, branch }).loose();

export const ExplainBody = z
  .object({ ...base, verbose: optBool, query: QueryBody.nullish().transform((q) => q ?? QueryBody.parse({})), branch })
  .loose();

export const CountRowsQuery = z.object({
  predicate: queryText().describe('SQL filter: count only matching rows.'),
  version: queryInt().describe('Table version to count.'),
  branch: branchParam(),
});

export const CountTableRowsResponse = z.number().int().min(0).describe('the row count as a bare JSON number');
export type CountTableRowsResponse = z.infer<typeof CountTableRowsResponse>;
/** Also the answer of AnalyzeTableQueryPlan (data/refs). */
export const ExplainTableQueryPlanResponse = z.string().describe('the plan, as a JSON string literal');
export type ExplainTableQueryPlanResponse = z.infer<typeof ExplainTableQueryPlanResponse>;
