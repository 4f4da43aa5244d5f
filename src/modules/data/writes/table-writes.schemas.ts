import { z } from 'zod';
import { flag, mode, queryJsonStringMap, queryList, queryParam, queryText } from '../../../platform/http/validation/fields';
import { propertiesField as props, storageOptionsField } from '../../catalog';
import { base, branch, branchParam, optStr } from '../dataplane.schemas';

/**
 * Bodies, query strings and answers of the row writes and table creation (an Arrow body's options are in the query
 * string). The services return the answers' types; the OpenAPI document shows them.
 */
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

// ---------------------------------------------------------------------------------------------- answers

export const CreateTableResponse = z
  .object({
    location: z.string(),
    version: z.number().int().optional().describe('absent for mode ExistOk on an existing table'),
    properties: props,
    name: z.string().optional().describe('new tables only'),
    num_rows: z.number().int().optional().describe('new tables only: rows written'),
    storage_options: storageOptionsField,
  })
  .meta({ id: 'CreateTableResponse' });
export type CreateTableResponse = z.infer<typeof CreateTableResponse>;
/** The Enterprise edition's CreateTable (data/enterprise answers it; TableWritesService builds it). */
export const EnterpriseCreateTableResponse = z
  .object({
    name: z.string(),
    location: z.string(),
    version: z.number().int(),
    num_rows: z.number().int(),
    properties: props,
  })
  .meta({ id: 'EnterpriseCreateTableResponse' });
export type EnterpriseCreateTableResponse = z.infer<typeof EnterpriseCreateTableResponse>;
export const InsertIntoTableResponse = z
  .object({ version: z.number().int(), num_inserted_rows: z.number().int() })
  .meta({ id: 'InsertIntoTableResponse' });
export type InsertIntoTableResponse = z.infer<typeof InsertIntoTableResponse>;
export const MergeInsertIntoTableResponse = z
  .object({
    version: z.number().int(),
    num_inserted_rows: z.number().int(),
    num_updated_rows: z.number().int(),
    num_deleted_rows: z.number().int(),
    num_attempts: z.number().int().optional(),
  })
  .meta({ id: 'MergeInsertIntoTableResponse' });
export type MergeInsertIntoTableResponse = z.infer<typeof MergeInsertIntoTableResponse>;
export const UpdateTableResponse = z
  .object({
    updated_rows: z.number().int(),
    rows_updated: z.number().int().describe('same as `updated_rows` (the official remote client reads this name)'),
    version: z.number().int(),
  })
  .meta({ id: 'UpdateTableResponse' });
export type UpdateTableResponse = z.infer<typeof UpdateTableResponse>;
export const DeleteFromTableResponse = z
  .object({ num_deleted_rows: z.number().int(), version: z.number().int() })
  .meta({ id: 'DeleteFromTableResponse' });
export type DeleteFromTableResponse = z.infer<typeof DeleteFromTableResponse>;
