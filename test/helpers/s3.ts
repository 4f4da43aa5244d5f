import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
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
      const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: dir, configureBuckets: [{ name: TEST_BUCKET }, { name: TEST_BUCKET_2 }] });
      honourConditionalCreate(server);
      const { port } = (await server.run()) as { port: number };
      const endpoint = `http://127.0.0.1:${port}`;
      const client = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
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
  const app = server as { middleware: Array<(ctx: Ctx, next: () => Promise<void>) => Promise<void>>; store: { existsObject(b: string, k: string): Promise<boolean> } };
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

export function s3Options(endpoint: string): Record<string, string> {
  return {
    aws_access_key_id: 'S3RVER',
    aws_secret_access_key: 'S3RVER',
    aws_region: 'us-east-1',
    aws_endpoint: endpoint,
    allow_http: 'true',
    aws_virtual_hosted_style_request: 'false',
  };
}

/** A fresh prefix in the test bucket. */
export function freshPrefix(): string {
  return `gw-${randomBytes(5).toString('hex')}`;
}
