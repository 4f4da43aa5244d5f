import { z } from 'zod';
import { limit, pageToken, queryText } from '../../../platform/http/validation/fields';

/**
 * Request bodies and answers of tags, branches and field metadata (Lance Namespace spec 0.11.1, and the official
 * remote client's shapes where they differ). Unknown fields are ignored; `null` means absent.
 */
const base = { id: z.array(z.string()).nullish(), identity: z.unknown().optional(), context: z.unknown().optional() };
const optStr = z
  .string()
  .nullish()
  .transform((v) => v ?? undefined);
const optInt = z
  .number()
  .int()
  .nonnegative()
  .nullish()
  .transform((v) => v ?? undefined);
const branch = optStr.describe('Branch to target; absent, `""` or `"main"` = main.');
const tagName = z.string({ error: 'tag is required' }).min(1, 'tag must not be empty').describe('Tag name.');
const branchName = z
  .string({ error: 'name is required' })
  .min(1, 'name must not be empty')
  // A branch is a folder (`tree/<name>`): a segment longer than a file name may be is the caller's mistake, not a 5xx.
  .refine(
    (n) => n.split('/').every((seg) => Buffer.byteLength(seg) <= 255),
    'each `/`-separated part of a branch name must be at most 255 bytes',
  )
  .describe('Branch name.');

// ---------------------------------------------------------------------------------------------- requests

export const TagBody = z.object({ ...base, tag: tagName }).loose();
export const TagVersionBody = z
  .object({ ...base, tag: tagName, version: z.number({ error: 'version is required' }).int().nonnegative(), branch })
  .loose();
export const CreateBranchBody = z
  .object({
    ...base,
    name: branchName,
    from_branch: optStr.describe('Branch to fork from; main when absent.'),
    from_version: optInt.describe('Version of the source to fork from; its latest when absent.'),
  })
  .loose();
export const BranchNameBody = z.object({ ...base, name: branchName }).loose();
/** branches/diff and branches/cherry_pick of the official remote client (`dry_run` is read by nothing: always 406). */
export const FromBranchBody = z
  .object({
    ...base,
    from_branch: z.string({ error: 'from_branch is required' }).min(1, 'from_branch must not be empty'),
    dry_run: z.boolean().nullish(),
  })
  .loose();

/** ListTableTags / ListTableBranches take no body in the REST binding: paging is in the query. */
export const RefsPageQuery = z.object({
  page_token: pageToken,
  limit: limit.describe('Largest number of entries in the answer; all of them when absent, capped at LIST_MAX_LIMIT.'),
});

export const FieldMetadataBody = z
  .object({
    ...base,
    branch,
    updates: z
      .array(
        z
          .object({
            path: z.string({ error: 'updates[].path is required' }).min(1),
            metadata: z.record(z.string(), z.string().nullable(), { error: 'updates[].metadata must map keys to strings or null' }),
            replace: z
              .boolean()
              .nullish()
              .transform((v) => v ?? undefined),
          })
          .loose(),
      )
      .min(1, 'updates must not be empty'),
  })
  .loose();

/** UpdateTableSchemaMetadata's body is the bare map of the new metadata. */
export const SchemaMetadataBody = z.record(z.string(), z.string(), { error: 'the body must map keys to strings' });

export const AnalyzePlanQuery = z.object({
  distributed_metrics: queryText().describe('`per_worker` or `full` (the official remote client); one process here, so ignored.'),
});

// ---------------------------------------------------------------------------------------------- answers

export const TagContents = z
  .object({
    version: z.number().int(),
    manifestSize: z.number().int(),
    branch: z.string().optional().describe('the branch the tagged version lives on; absent for main'),
  })
  .meta({ id: 'TagContents' });
export type TagContents = z.infer<typeof TagContents>;

export const ListTableTagsResponse = z
  .object({
    tags: z.record(z.string(), TagContents).describe('tag name → what it points to'),
    page_token: z.string().optional().describe('present when `limit` cut the list short'),
  })
  .meta({ id: 'ListTableTagsResponse' });
export type ListTableTagsResponse = z.infer<typeof ListTableTagsResponse>;
/** The official remote client's answer: the bare map. */
export const RemoteListTagsResponse = z
  .record(z.string(), TagContents)
  .describe("tag name → what it points to (the remote client's bare map)");

export const GetTableTagVersionResponse = z
  .object({ version: z.number().int(), branch: z.string().optional().describe('absent when the tag points into main') })
  .meta({ id: 'GetTableTagVersionResponse' });
export type GetTableTagVersionResponse = z.infer<typeof GetTableTagVersionResponse>;

export const BranchContents = z
  .object({
    parentBranch: z.string().optional().describe('absent when forked from main'),
    parentVersion: z.number().int(),
    createAt: z.number().int().describe('creation time, seconds since the epoch (0 when unknown)'),
    manifestSize: z.number().int(),
    metadata: z.record(z.string(), z.string()).optional(),
  })
  .meta({ id: 'BranchContents' });
export type BranchContents = z.infer<typeof BranchContents>;

export const ListTableBranchesResponse = z
  .object({
    branches: z.record(z.string(), BranchContents),
    page_token: z.string().optional().describe('present when `limit` cut the list short'),
  })
  .meta({ id: 'ListTableBranchesResponse' });
export type ListTableBranchesResponse = z.infer<typeof ListTableBranchesResponse>;

export const UpdateFieldMetadataResponse = z
  .object({
    version: z.number().int().describe('the table version after the change'),
    fields: z.record(z.string(), z.record(z.string(), z.string())).describe('the resulting metadata of each updated field, by path'),
  })
  .meta({ id: 'UpdateFieldMetadataResponse' });
export type UpdateFieldMetadataResponse = z.infer<typeof UpdateFieldMetadataResponse>;
