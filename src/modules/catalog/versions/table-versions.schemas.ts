import { z } from 'zod';

/**
 * A table version as the version routes answer it (ListTableVersions, DescribeTableVersion, answered by
 * data/schema, and the catalog-managed version operations of managed-versions.schemas.ts).
 */
export const TableVersion = z
  .object({
    version: z.number().int().min(0),
    manifest_path: z
      .string()
      .describe(
        "the manifest file of this version, as a path on the table's object store (for local storage: the absolute path without its leading `/`)",
      ),
    manifest_size: z.number().int().min(0).optional().describe('size of the manifest file in bytes'),
    e_tag: z.string().optional().describe("the manifest's ETag as the writer reported it (catalog-managed versions)"),
    timestamp_millis: z.number().int().describe('when the version was committed, in milliseconds since the epoch'),
    timestamp: z.string().describe('the same instant in RFC 3339 (what the official remote client reads)'),
    metadata: z.record(z.string(), z.string()),
  })
  .meta({ id: 'TableVersion' });
export type TableVersion = z.infer<typeof TableVersion>;
export const ListTableVersionsResponse = z
  .object({
    versions: z.array(TableVersion).describe('oldest first, or newest first with `descending=true`'),
    page_token: z.string().optional().describe('present when `limit` cut the list short: pass it back as `page_token`'),
  })
  .meta({ id: 'ListTableVersionsResponse' });
export type ListTableVersionsResponse = z.infer<typeof ListTableVersionsResponse>;
export const DescribeTableVersionResponse = z.object({ version: TableVersion }).meta({ id: 'DescribeTableVersionResponse' });
export type DescribeTableVersionResponse = z.infer<typeof DescribeTableVersionResponse>;
