import { Errors } from './errors';

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
  try {
    const v: unknown = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    if (isValid(v)) return v;
  } catch {
    /* fall through */
  }
  throw Errors.invalidInput('page_token is not a token this server issued');
}

export const isString = (v: unknown): v is string => typeof v === 'string';
export const isStringPair = (v: unknown): v is [string, string] =>
  Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && typeof v[1] === 'string';

/** `limit` is an inclusive upper bound; absent → the configured default; above the maximum → the maximum. */
export function resolveLimit(raw: unknown, def: number, max: number): number {
  if (raw === undefined || raw === null || raw === '') return def;
  const n = typeof raw === 'number' ? raw : Number(raw);
  if (!Number.isInteger(n)) throw Errors.invalidInput(`limit must be an integer, got '${String(raw)}'`);
  if (n < 0) return def; // the reference ignores a negative limit
  return Math.min(n, max);
}

export function parseBool(raw: unknown, name: string, def: boolean): boolean {
  if (raw === undefined || raw === null || raw === '') return def;
  if (raw === true || raw === 'true') return true;
  if (raw === false || raw === 'false') return false;
  throw Errors.invalidInput(`${name} must be true or false, got '${String(raw)}'`);
}

export interface Page<T> {
  items: T[];
  pageToken?: string;
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
