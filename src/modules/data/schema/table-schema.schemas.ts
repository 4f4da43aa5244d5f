import { z } from 'zod';
import { flag, limit, pageToken } from '../../../platform/http/validation/fields';
import { base, branch, branchParam, optBool, optInt, optStr } from '../dataplane.schemas';

/** Bodies of the column changes (add, alter, drop, backfill) and of the version operations. */
export const AddColumnsBody = z
  .object({
    ...base,
    new_columns: z
      .array(
        z
          .object({
            name: z.string(),
            expression: optStr.describe('SQL evaluated once over the existing rows'),
            computed: optStr.describe("SQL kept as the column's definition: the column is added empty and filled by backfill_column"),
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

/** AlterTableBackfillColumns: the computed column to fill (the spec's tuning fields are accepted and not needed). */
export const BackfillColumnBody = z
  .object({
    ...base,
    column: z.string({ error: 'column is required' }).min(1, 'column must not be empty'),
    where: optStr,
    branch,
  })
  .loose();

/** ListTableVersions takes no body in the REST binding: everything is in the query. */
export const ListVersionsQuery = z.object({
  branch: branchParam(),
  descending: flag().describe('Newest first (otherwise oldest first).'),
  page_token: pageToken,
  limit: limit.describe('Largest number of versions in the answer; all of them when absent, capped at LIST_MAX_LIMIT.'),
});

/** DescribeTableVersion: `version` absent = the latest. */
export const DescribeVersionBody = z.object({ ...base, version: optInt, branch }).loose();

/** The answer of the changes that make a new version (restore, add/alter/drop columns). */
export const VersionResponse = z
  .object({ version: z.number().int().describe('the table version after the change') })
  .meta({ id: 'VersionResponse' });
export type VersionResponse = z.infer<typeof VersionResponse>;
