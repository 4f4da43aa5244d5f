import { z } from 'zod';
import { queryInt, queryText } from '../../../platform/http/validation/fields';
import { base, branch, branchParam, optBool, optInt, optStr, QueryBody } from '../dataplane.schemas';

/** CountTableRows (POST body, GET query) and ExplainTableQueryPlan. */
export const CountRowsBody = z.object({ ...base, predicate: optStr, filter: optStr, version: optInt, branch }).loose();

export const ExplainBody = z
  .object({ ...base, verbose: optBool, query: QueryBody.nullish().transform((q) => q ?? QueryBody.parse({})), branch })
  .loose();

export const CountRowsQuery = z.object({
  predicate: queryText().describe('SQL filter: count only matching rows.'),
  version: queryInt().describe('Table version to count.'),
  branch: branchParam(),
});
