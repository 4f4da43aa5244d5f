import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ListObjectsV2Command, S3Client, S3ClientConfig } from '@aws-sdk/client-s3';
// s3rver (devDependency): a local S3-compatible server, so Lance's own S3 code path runs against real HTTP.
import S3rver = require('s3rver');

/**
 * A local S3-compatible server for the tests (s3rver). Started on first use in a test process and stopped when the
 * last user releases it, so test processes can exit. Every gateway gets its own prefix in the one bucket.
 */
export const TEST_BUCKET = 'lgw-test';
export const TEST_BUCKET_2 = 'lgw-test-eu';

export interface LocalS3 {
  endpoint: string;
  /** Lance storage options reaching it (what STORAGE_OPTIONS holds). */
  options: Record<string, string>;
  client: S3Client;
  /** The folder s3rver keeps its buckets in. */
  dir: string;
  /** Keys under a prefix of a bucket (default TEST_BUCKET). */
  keys(prefix: string, bucket?: string): Promise<string[]>;
  release(): Promise<void>;
}

let shared: { server: { close(): Promise<void> }; dir: string; endpoint: string; users: number; client: S3Client } | undefined;
let starting: Promise<void> | undefined;

export async function useLocalS3(): Promise<LocalS3> {
  while (starting) await starting;
  if (!shared) {
    starting = (async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lgw-s3-'));
      const server = new S3rver({
        port: 0,
        address: '127.0.0.1',
        silent: true,
        directory: dir,
        configureBuckets: [{ name: TEST_BUCKET }, { name: TEST_BUCKET_2 }],
      });
      honourConditionalCreate(server);
      containErrors(server);
      const { port } = (await server.run()) as { port: number };
      containServerErrors(server);
      const endpoint = `http://127.0.0.1:${port}`;
      const client = s3ClientFor(endpoint);
      shared = { server, dir, endpoint, users: 0, client };
    })();
    try {
      await starting;
    } finally {
      starting = undefined;
    }
  }
  const s = shared!;
  s.users++;
  let released = false;
  return {
    endpoint: s.endpoint,
    options: s3Options(s.endpoint),
    client: s.client,
    dir: s.dir,
    async keys(prefix: string, bucket = TEST_BUCKET) {
      const out: string[] = [];
      let token: string | undefined;
      do {
        const r = await s.client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
        out.push(...(r.Contents ?? []).map((o) => o.Key as string));
        token = r.IsTruncated ? r.NextContinuationToken : undefined;
      } while (token);
      return out;
    },
    async release() {
      if (released) return;
      released = true;
      s.users--;
      if (s.users === 0 && shared === s) {
        shared = undefined;
        s.client.destroy();
        await closeServer(s.server);
        fs.rmSync(s.dir, { recursive: true, force: true });
      }
    },
  };
}

/**
 * Stops s3rver without waiting on connections some client keeps open (a native engine's pooled keep-alive socket, a
 * request a closed gateway abandoned): `close()` alone waits for every socket to end, which can be never.
 */
export async function closeServer(server: { close(): Promise<void> }): Promise<void> {
  const http = (server as { httpServer?: { closeAllConnections?(): void } }).httpServer;
  const closed = server.close().catch(() => undefined);
  http?.closeAllConnections?.();
  await Promise.race([closed, new Promise((r) => setTimeout(r, 5000).unref())]);
}

/**
 * The local S3 server this test process has started (while some gateway or test holds it through useLocalS3), for
 * test code that reads or writes the tables a gateway on the object-store pass keeps there.
 */
export function activeS3(): { endpoint: string; options: Record<string, string>; client: S3Client } {
  if (!shared) throw new Error('no local S3 server is running in this test process (useLocalS3 first)');
  return { endpoint: shared.endpoint, options: s3Options(shared.endpoint), client: shared.client };
}

/**
 * s3rver ignores `If-None-Match: *` on PUT, which S3 itself (and MinIO) honour: the second of two writers creating
 * one key must get 412 Precondition Failed. Lance commits a version by creating its manifest that way, so without
 * this concurrent writers to one table would silently overwrite each other's commits on the test store. A middleware
 * ahead of s3rver's own makes such a PUT fail with 412 when the key exists, one request per key at a time.
 */
function honourConditionalCreate(server: unknown): void {
  type Ctx = { method: string; path: string; headers: Record<string, string | undefined>; status: number; type: string; body: unknown };
  const app = server as {
    middleware: Array<(ctx: Ctx, next: () => Promise<void>) => Promise<void>>;
    store: { existsObject(b: string, k: string): Promise<boolean> };
  };
  const busy = new Map<string, Promise<void>>();
  app.middleware.unshift(async (ctx, next) => {
    if (ctx.method !== 'PUT' || ctx.headers['if-none-match'] !== '*') return next();
    const [bucket, ...rest] = ctx.path.replace(/^\/+/, '').split('/');
    const key = decodeURIComponent(rest.join('/'));
    const id = `${bucket}/${key}`;
    while (busy.has(id)) await busy.get(id);
    let done!: () => void;
    busy.set(id, new Promise<void>((r) => (done = r)));
    try {
      if (await app.store.existsObject(bucket, key)) {
        ctx.status = 412;
        ctx.type = 'application/xml';
        ctx.body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified did not hold</Message><Condition>If-None-Match</Condition></Error>`;
        return;
      }
      await next();
    } finally {
      busy.delete(id);
      done();
    }
  });
}

/**
 * Keeps s3rver's failures inside it, so they never become an uncaught exception of the test process (which fails
 * the whole test file): its filesystem store writes objects and parts through streams without an 'error' listener
 * (an object PUT racing a DELETE that removes the now-empty folder threw ENOENT that way), so those writes are done
 * here through pipeline(), which turns any stream's error into the request's 500; the app's and its logger's
 * 'error' events are logged (s3rver's `silent` silenced Koa's own report). Call before run(), and
 * containServerErrors after it.
 */
export function containErrors(server: unknown): void {
  type S3Obj = { bucket: string; key: string; content: Buffer | Readable; metadata: Record<string, string> };
  type Store = {
    getResourcePath(bucket: string, key: string | undefined, resource: string): string;
    putMetadata(bucket: string, key: string, metadata: Record<string, string>, md5: string): Promise<void>;
    putObject(object: S3Obj): Promise<{ size: number; md5: string }>;
    putPart(bucket: string, uploadId: string, partNumber: number, content: Readable): Promise<{ size: number; md5: string }>;
    putObjectMultipart(bucket: string, uploadId: string, parts: Array<{ number: number | string }>): Promise<{ size: number; md5: string }>;
    deleteObject(bucket: string, key: string): Promise<void>;
  };
  const app = server as {
    store: Store;
    logger: { on(event: 'error', fn: (err: Error) => void): void };
    on(event: 'error', fn: (err: Error & { status?: number }, ctx?: { method: string; path: string }) => void): void;
  };
  // s3rver's model of an object (it checks and picks the stored metadata as its own code does).
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const S3Object = require('s3rver/lib/models/object') as new (
    bucket: string,
    key: string,
    content: Readable,
    metadata: Record<string, string>,
  ) => S3Obj;
  const store = app.store;
  // A PUT becomes visible whole, as on S3: s3rver wrote the object's own file in place, so a listing or a read
  // during the write saw a short or empty object (a maintenance job's read of a manifest being written failed
  // with 'Range started at 0 and ended at 0'). The content goes to a file beside it that no listing or read looks
  // at (only names ending in '._S3rver_object' are objects), then is renamed over the object's.
  store.putObject = async function (object) {
    const file = this.getResourcePath(object.bucket, object.key, 'object');
    const partial = `${file}.${randomBytes(6).toString('hex')}.partial`;
    try {
      const r = await writeWhole(partial, object.content);
      await this.putMetadata(object.bucket, object.key, object.metadata, r.md5);
      await fs.promises.rename(partial, file);
      return r;
    } catch (err) {
      await fs.promises.rm(partial, { force: true });
      throw err;
    }
  };
  store.putPart = async function (bucket, uploadId, partNumber, content) {
    const file = path.join(this.getResourcePath(bucket, undefined, 'uploads'), uploadId, String(partNumber));
    const r = await writeWhole(file, content);
    await fs.promises.writeFile(`${file}.md5`, r.md5);
    return r;
  };
  store.putObjectMultipart = async function (bucket, uploadId, parts) {
    const dir = path.join(this.getResourcePath(bucket, undefined, 'uploads'), uploadId);
    const key = await fs.promises.readFile(path.join(dir, 'key'), 'utf8');
    const metadata = JSON.parse(await fs.promises.readFile(path.join(dir, 'metadata'), 'utf8')) as Record<string, string>;
    const numbers = parts.map((p) => Number(p.number)).sort((a, b) => a - b);
    // The parts are opened one after the other as they are read (s3rver opened them all at once, unwatched).
    async function* content(): AsyncGenerator<Buffer> {
      for (const n of numbers) yield* fs.createReadStream(path.join(dir, String(n)));
    }
    const r = await this.putObject(new S3Object(bucket, key, Readable.from(content()), metadata));
    await fs.promises.rm(dir, { recursive: true, force: true });
    return r;
  };
  // Its delete then removes the folders it emptied, reading and removing them unguarded: a concurrent delete (the
  // keys of one DeleteObjects are removed in parallel) or write in the same folder made the request a 500.
  const deleteObject = store.deleteObject.bind(store);
  store.deleteObject = (bucket, key) =>
    deleteObject(bucket, key).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT' && err.code !== 'ENOTEMPTY') throw err;
    });
  app.on('error', (err, ctx) => {
    // Answers such as NoSuchKey come this way too; only the server's own failures are worth a line.
    if ((err.status ?? 500) >= 500) console.error(`s3rver: ${ctx?.method ?? ''} ${ctx?.path ?? ''}: ${err.message}`);
  });
  app.logger.on('error', (err) => console.error(`s3rver logger: ${err.message}`));
}

/** The listening half of containErrors (s3rver makes its HTTP server in run()). */
export function containServerErrors(server: unknown): void {
  (server as { httpServer?: { on(event: 'error', fn: (err: Error) => void): void } }).httpServer?.on('error', (err) =>
    console.error(`s3rver server: ${err.message}`),
  );
}

/**
 * Writes a stream (or buffer) to a new file, its folder made first, resolving with its size and MD5 once it is all
 * on disk. A folder removed while it is made or before the file is (a concurrent DELETE clears the folders it
 * empties) is made again; once the file exists the folder is not empty, so it stays.
 */
async function writeWhole(file: string, content: Buffer | Readable): Promise<{ size: number; md5: string }> {
  let handle: fs.promises.FileHandle;
  for (let attempt = 0; ; attempt++) {
    try {
      await fs.promises.mkdir(path.dirname(file), { recursive: true });
      handle = await fs.promises.open(file, 'w');
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || attempt >= 3) throw err;
    }
  }
  const hash = createHash('md5');
  let size = 0;
  const count = new Transform({
    transform(chunk: Buffer, _enc, done) {
      hash.update(chunk);
      size += chunk.length;
      done(null, chunk);
    },
  });
  try {
    await pipeline(Buffer.isBuffer(content) ? Readable.from([content]) : content, count, handle.createWriteStream());
  } finally {
    await handle.close().catch(() => undefined);
  }
  return { size, md5: hash.digest('hex') };
}

/** s3rver's fixed credentials (key id and secret alike) and the region the tests name. */
const S3RVER_KEY = 'S3RVER';
const REGION = 'us-east-1';

/** An S3 client of the local server at `endpoint` (its fixed credentials), with `extra` settings. */
export function s3ClientFor(endpoint: string, extra: Partial<S3ClientConfig> = {}): S3Client {
  return new S3Client({
    endpoint,
    region: REGION,
    forcePathStyle: true,
    credentials: { accessKeyId: S3RVER_KEY, secretAccessKey: S3RVER_KEY },
    ...extra,
  });
}

export function s3Options(endpoint: string): Record<string, string> {
  return {
    aws_access_key_id: S3RVER_KEY,
    aws_secret_access_key: S3RVER_KEY,
    aws_region: REGION,
    aws_endpoint: endpoint,
    allow_http: 'true',
    aws_virtual_hosted_style_request: 'false',
  };
}

/** A fresh prefix in the test bucket. */
export function freshPrefix(): string {
  return `gw-${randomBytes(5).toString('hex')}`;
}
