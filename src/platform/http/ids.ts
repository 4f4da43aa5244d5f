import { Errors } from './errors';

/** docs/rest-contract.md §1, §8: a name is non-empty and uses only letters, digits, underscores, hyphens and periods. */
const NAME_RE = /^[A-Za-z0-9_.-]+$/;
/** Keeps index entries bounded; far above any real name. */
export const MAX_NAME_LENGTH = 256;
export const MAX_PATH_DEPTH = 32;
/**
 * The longest identifier (namespace path or table id, its parts joined by one character): what the catalog's
 * (database, catalog, path) and (database, catalog, namespace path, name) indexes hold in one entry (Postgres keeps at
 * most about 2.7 KB), with room for the database, catalog and table name beside it.
 */
export const MAX_ID_LENGTH = 2000;
export const DEFAULT_DELIMITER = '$';

export function assertName(name: unknown, what = 'name'): string {
  if (typeof name !== 'string' || !NAME_RE.test(name)) {
    throw Errors.invalidInput(
      `invalid ${what} ${JSON.stringify(name)}: a name must be non-empty and use only letters, digits, '_', '-' and '.'`,
    );
  }
  if (name.length > MAX_NAME_LENGTH) throw Errors.invalidInput(`${what} is longer than ${MAX_NAME_LENGTH} characters`);
  return name;
}

export function assertPath(parts: string[], what = 'namespace'): string[] {
  if (parts.length > MAX_PATH_DEPTH) throw Errors.invalidInput(`${what} is deeper than ${MAX_PATH_DEPTH} levels`);
  parts.forEach((p) => assertName(p, `${what} component`));
  const length = parts.reduce((n, p) => n + p.length + 1, -1);
  if (length > MAX_ID_LENGTH) throw Errors.invalidInput(`${what} is longer than ${MAX_ID_LENGTH} characters`);
  return parts;
}

export function resolveDelimiter(delimiter: unknown): string {
  if (delimiter === undefined || delimiter === null) return DEFAULT_DELIMITER;
  if (typeof delimiter !== 'string' || delimiter.length === 0) throw Errors.invalidInput('delimiter must not be empty');
  return delimiter;
}

/**
 * docs/rest-contract.md §4.1: `{id}` is split by the delimiter (default `$`); the delimiter alone is the root namespace. The
 * framework has already percent-decoded the path segment. An empty component (e.g. `a$$b`) breaks the name rule.
 */
export function parseObjectId(rawId: string, delimiter: string): string[] {
  if (rawId === delimiter) return [];
  return assertPath(rawId.split(delimiter), 'identifier');
}

/** A body `id` that disagrees with the path is a malformed request; an absent one defers to the path. */
export function reconcileBodyId(pathId: string[], bodyId: unknown): string[] {
  if (bodyId === undefined || bodyId === null) return pathId;
  if (!Array.isArray(bodyId) || bodyId.some((p) => typeof p !== 'string')) {
    throw Errors.invalidInput('body id must be an array of strings');
  }
  if (bodyId.length !== pathId.length || bodyId.some((p, i) => p !== pathId[i])) {
    throw Errors.invalidInput(`body id ${JSON.stringify(bodyId)} does not match the path identifier ${JSON.stringify(pathId)}`);
  }
  return pathId;
}

/** Catalog encoding of a namespace path: components joined by U+001F (never valid in a name). */
/** An object id as messages show it: its parts joined by the default delimiter. */
export const displayId = (id: readonly string[]) => id.join(DEFAULT_DELIMITER);

export const PATH_SEP = '\u001f';
export const encodePath = (parts: readonly string[]) => parts.join(PATH_SEP);
export const decodePath = (encoded: string) => (encoded === '' ? [] : encoded.split(PATH_SEP));
