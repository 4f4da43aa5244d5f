import { z } from 'zod';
import { queryText } from '../../platform/http/validation/fields';

/**
 * What the request bodies of the data plane share, in both dialects: the official remote client's and the Lance
 * Namespace spec's (each feature folder's *.schemas.ts holds its own bodies). Unknown fields are ignored; `null`
 * means absent.
 */
export const base = { id: z.array(z.string()).nullish(), identity: z.unknown().optional(), context: z.unknown().optional() };
export const optNum = z.number().nullish().transform((v) => v ?? undefined);
export const optInt = z.number().int().nonnegative().nullish().transform((v) => v ?? undefined);
export const optStr = z.string().nullish().transform((v) => v ?? undefined);
export const optBool = z.boolean().nullish().transform((v) => v ?? undefined);
/** The branch a data operation targets; absent, `""` or `"main"` = main. */
export const branch = optStr.describe('Branch to target; absent, `""` or `"main"` = main.');
/** The same in a query string (writes whose body is Arrow, and bodyless operations). */
export const branchParam = () => queryText().describe('Branch to target; absent, empty or `main` = main.');

/** A version of a branch (index list and stats, restore). */
export const VersionBody = z.object({ ...base, version: optInt, branch }).loose();

/** DropTableIndex, multipart writes and tags: the spec's binding takes the branch from the query. */
export const BranchQuery = z.object({ branch: branchParam() });
