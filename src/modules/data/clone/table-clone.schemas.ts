import { z } from 'zod';

/** The official remote client's clone request (`Connection.cloneTable` in remote mode); unknown fields are ignored. */
export const CloneTableBody = z
  .object({
    source_location: z
      .string({ error: 'source_location is required' })
      .min(1, 'source_location must not be empty')
      .describe(
        "The table to clone, of the caller's own database (and prefix): its location as describe reports it, that location " +
          'relative to the database folder, or its identifier.',
      ),
    source_version: z
      .number()
      .int()
      .nonnegative()
      .nullish()
      .transform((v) => v ?? undefined)
      .describe('Version of the source; its latest when absent.'),
    source_tag: z
      .string()
      .min(1)
      .nullish()
      .transform((v) => v ?? undefined)
      .describe('Tag of the source to clone (instead of a version).'),
    is_shallow: z
      .boolean()
      .nullish()
      .transform((v) => v ?? true)
      .describe("true (default): the clone refers to the source's data files; false: the rows are copied into the clone's own folder."),
  })
  .loose();

export const CloneTableResponse = z
  .object({
    location: z.string().describe('Where the clone lives.'),
    version: z.number().int().describe("The clone's latest version."),
    properties: z.record(z.string(), z.string()),
  })
  .meta({ id: 'CloneTableResponse' });
export type CloneTableResponse = z.infer<typeof CloneTableResponse>;
