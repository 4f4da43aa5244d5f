import { z } from 'zod';
import { flag, mode, queryJsonStringMap, queryList, queryParam, queryText } from '../../../platform/http/validation/fields';
import { base, branch, branchParam, optStr } from '../dataplane.schemas';

/** Bodies and query strings of the row writes (an Arrow body's options are in the query string). */
export const UpdateBody = z
  .object({
    ...base,
    updates: z.array(z.array(z.string())).min(1, 'update requires at least one [column, expression] pair'),
    predicate: optStr,
    branch,
  })
  .loose();

export const DeleteBody = z.object({ ...base, predicate: z.string({ error: 'predicate is required' }), branch }).loose();

export const CreateTableQuery = z.object({
  mode: queryParam(mode(['create', 'exist_ok', 'overwrite'], 'create')),
  properties: queryJsonStringMap().describe('Table properties as one JSON-encoded object of strings.'),
});

export const InsertQuery = z.object({
  mode: queryParam(mode(['append', 'overwrite'], 'append')),
  branch: branchParam(),
  upload_id: queryText().describe(
    'A multipart write (from multipart_write/create): the body is staged as one part, committed at complete.',
  ),
  upload_part_id: queryText().describe("The part's id within the multipart write (sending a part again replaces it)."),
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
