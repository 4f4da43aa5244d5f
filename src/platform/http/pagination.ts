import { Errors } from './errors';
import type { PageRequest } from './validation/fields';
import { findUnsafeString } from './input-sanity';

/**
 * Opaque page tokens and bounded limits for every list (docs/rest-contract.md §4.6). A token is the key of the last item of the
 * previous page (start-after semantics, as the reference implementation), base64url-encoded JSON so clients
 * cannot depend on its shape.
 */
export function encodePageToken(key: unknown): string {
  return Buffer.from(JSON.stringify(key), 'utf8').toString('base64url');
}

export function decodePageToken<T>(token: unknown, isValid: (v: unknown) => v is T): T | undefined {
  if (token === undefined || token === null || token === '') return undefined;
  if (typeof token !== 'string') throw Errors.invalidInput('page_token must be a string');
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    /* below */
  }
  // A forged token's strings reach catalog queries as keys: refuse what Postgres cannot compare (NUL, lone surrogates).
  const problem = findUnsafeString(v, 'page_token');
  if (problem) throw Errors.invalidInput(problem);
  if (isValid(v)) return v;
  throw Errors.invalidInput('page_token is not a token this server issued');
}

export const isString = (v: unknown): v is string => typeof v === 'string';
export const isStringPair = (v: unknown): v is [string, string] =>
  Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && typeof v[1] === 'string';

/** The bounds of every list (LIST_DEFAULT_LIMIT, LIST_MAX_LIMIT; part of the configuration). */
export interface PageBounds {
  listDefaultLimit: number;
  listMaxLimit: number;
}

/** `limit` is an inclusive upper bound; absent → the configured default; above the maximum → the maximum. */
export function pageLimit(requested: number | undefined, bounds: PageBounds): number {
  return requested === undefined ? bounds.listDefaultLimit : Math.min(requested, bounds.listMaxLimit);
}

/**
 * One page of a list, the way every list answers: the page's rows, and `page_token` (the key of its last row) when
 * more follow. `isKey` tells a token this list issued from anything else (a 400).
 */
export async function paginate<R, K>(
  page: PageRequest,
  bounds: PageBounds,
  source: {
    isKey: (v: unknown) => v is K;
    fetch: (after: K | undefined, take: number) => Promise<R[]>;
    keyOf: (row: R) => K;
    keep?: (rows: R[]) => Promise<R[]>;
  },
): Promise<{ rows: R[]; page_token?: string }> {
  const { rows, nextAfter } = await collectPage({
    limit: pageLimit(page.limit, bounds),
    after: decodePageToken(page.page_token, source.isKey),
    fetch: source.fetch,
    keyOf: source.keyOf,
    keep: source.keep,
  });
  return nextAfter === undefined ? { rows } : { rows, page_token: encodePageToken(nextAfter) };
}

/**
 * Fills one page from a keyset source, keeping only items `keep` accepts (e.g. hiding declared-only tables),
 * and fetching further chunks only when filtering thinned the page out. `more` in the result is exact.
 */
export async function collectPage<R, K>(opts: {
  limit: number;
  after: K | undefined;
  fetch: (after: K | undefined, take: number) => Promise<R[]>;
  keyOf: (row: R) => K;
  keep?: (rows: R[]) => Promise<R[]>;
}): Promise<{ rows: R[]; nextAfter?: K }> {
  if (opts.limit === 0) return { rows: [] };
  const want = opts.limit + 1;
  const kept: R[] = [];
  let after = opts.after;
  for (;;) {
    const chunk = await opts.fetch(after, want);
    const accepted = opts.keep ? await opts.keep(chunk) : chunk;
    kept.push(...accepted);
    if (chunk.length < want || kept.length >= want) break;
    after = opts.keyOf(chunk[chunk.length - 1]);
  }
  if (kept.length > opts.limit) {
    const rows = kept.slice(0, opts.limit);
    return { rows, nextAfter: opts.keyOf(rows[rows.length - 1]) };
  }
  return { rows: kept };
}
