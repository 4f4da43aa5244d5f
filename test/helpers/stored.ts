import * as fs from 'node:fs';
import * as path from 'node:path';
import { HeadObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { activeS3 } from './s3';

/**
 * Storage-neutral looks at what the gateway stored, for tests that run on both passes (scripts/run-tests.js): table
 * locations are absolute local paths, or `s3://bucket/key` URIs on the object-store pass (TEST_STORAGE=s3), where
 * the bucket lives on the local S3 server of test/helpers/s3.ts.
 *
 * On an object store there are no folders, only objects under a key prefix: a "folder" exists when some object
 * lies under it, so a declared table that nobody has written yet does not exist there at all.
 */

export const isS3 = (location: string): boolean => location.startsWith('s3://');

function splitS3(uri: string): { bucket: string; key: string } {
  const m = /^s3:\/\/([^/]+)\/?(.*)$/.exec(uri);
  if (!m) throw new Error(`not an s3:// URI: ${uri}`);
  return { bucket: m[1], key: m[2].replace(/\/+$/, '') };
}

/** Every key under `prefix/` in a bucket (s3rver: listed without MaxKeys, following continuation tokens). */
async function keysUnder(bucket: string, prefix: string): Promise<string[]> {
  const { client } = activeS3();
  const out: string[] = [];
  let token: string | undefined;
  do {
    const r = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
    out.push(...(r.Contents ?? []).map((o) => o.Key as string));
    token = r.IsTruncated ? r.NextContinuationToken : undefined;
  } while (token);
  return out;
}

/** The separator of a location's kind: `/` in URIs, the platform's on the local store. */
export const sepOf = (location: string): string => (isS3(location) ? '/' : path.sep);

/** `folder` joined with `parts` the way locations of its kind are written. */
export function join(folder: string, ...parts: string[]): string {
  return isS3(folder) ? [folder.replace(/\/+$/, ''), ...parts].join('/') : path.join(folder, ...parts);
}

/** True when `location` lies strictly inside `folder`. */
export const isInside = (location: string, folder: string): boolean => location.startsWith(folder + sepOf(folder));

/** `to` relative to `from` (both of one kind; on s3 in one bucket), as path.relative does for local paths. */
export function relative(from: string, to: string): string {
  if (!isS3(from) && !isS3(to)) return path.relative(from, to);
  const a = splitS3(from);
  const b = splitS3(to);
  if (a.bucket !== b.bucket) throw new Error(`different buckets: ${from} ${to}`);
  return path.posix.relative(`/${a.key}`, `/${b.key}`);
}

/** The last segment of a location. */
export const basename = (location: string, ext?: string): string =>
  isS3(location) ? path.posix.basename(location, ext) : path.basename(location, ext);

/** The folder holding a location. */
export const dirname = (location: string): string =>
  isS3(location) ? location.slice(0, location.lastIndexOf('/')) : path.dirname(location);

/** True when the location holds anything: an existing file or folder (local), any object under `key/` (s3). */
export async function exists(location: string): Promise<boolean> {
  if (!isS3(location)) return fs.existsSync(location);
  const { bucket, key } = splitS3(location);
  return (await keysUnder(bucket, `${key}/`)).length > 0;
}

/** Names directly under a folder (files and sub-folders), sorted; none when it does not exist. */
export async function entries(folder: string): Promise<string[]> {
  if (!isS3(folder)) return fs.existsSync(folder) ? fs.readdirSync(folder).sort() : [];
  const { bucket, key } = splitS3(folder);
  const names = new Set<string>();
  for (const k of await keysUnder(bucket, `${key}/`)) {
    const rest = k.slice(key.length + 1);
    const name = rest.split('/')[0];
    if (name) names.add(name);
  }
  return [...names].sort();
}

/**
 * Bytes of every file under a location, recursively: walked on disk (local; links not followed), or summed from a
 * listing of the objects under `key/` on the test's S3 server (s3). Nothing there: 0.
 */
export async function bytesUnder(location: string): Promise<number> {
  if (!isS3(location)) {
    const walk = (p: string): number => {
      let st: fs.Stats;
      try {
        st = fs.lstatSync(p);
      } catch {
        return 0;
      }
      if (st.isFile()) return st.size;
      if (!st.isDirectory()) return 0;
      return fs.readdirSync(p).reduce((n, e) => n + walk(path.join(p, e)), 0);
    };
    return walk(location);
  }
  const { bucket, key } = splitS3(location);
  const { client } = activeS3();
  let total = 0;
  let token: string | undefined;
  do {
    const r = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: `${key}/`, ContinuationToken: token }));
    total += (r.Contents ?? []).reduce((n, o) => n + Number(o.Size ?? 0), 0);
    token = r.IsTruncated ? r.NextContinuationToken : undefined;
  } while (token);
  return total;
}

/** True when the table at `location` has a committed Lance version (a manifest under `_versions`). */
export async function hasVersions(location: string): Promise<boolean> {
  return (await entries(join(location, '_versions'))).some((f) => f.endsWith('.manifest'));
}

/**
 * A location as the engine's object store names it (what a version's `manifest_path` starts with): the absolute
 * path without its leading `/` (local), the key in the bucket (s3).
 */
export const objectPath = (location: string): string => (isS3(location) ? splitS3(location).key : location.replace(/^\/+/, ''));

/**
 * Size of the object a version's `manifest_path` names: the absolute path without its leading `/` (local), or the
 * key in the bucket of `storageRoot` (s3).
 */
export async function manifestSize(storageRoot: string, manifestPath: string): Promise<number> {
  if (!isS3(storageRoot)) return fs.statSync('/' + manifestPath).size;
  const { bucket } = splitS3(storageRoot);
  const r = await activeS3().client.send(new HeadObjectCommand({ Bucket: bucket, Key: manifestPath }));
  return Number(r.ContentLength);
}

/**
 * Makes `location` a "folder" that is not a Lance table: an empty folder (local), or a stray object under the
 * location's prefix (s3, which has no empty folders).
 */
export async function makeNonTableFolder(location: string): Promise<void> {
  if (!isS3(location)) {
    fs.mkdirSync(location, { recursive: true });
    return;
  }
  const { bucket, key } = splitS3(location);
  await activeS3().client.send(new PutObjectCommand({ Bucket: bucket, Key: `${key}/not-a-table.txt`, Body: 'stray' }));
}

/** A database's folder under a gateway's storage root (an absolute path, or an s3:// URI on the object-store pass). */
export const dbFolder = (gw: { config: { storageRoot: string } }, dbName: string): string => join(gw.config.storageRoot, dbName);
