import {
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  S3ClientConfig,
} from '@aws-sdk/client-s3';
import { StorageProfile } from '../../platform/config/storage-profile';
import { ObjectBackend, StoredObject } from './object-backend';

const pick = (o: Record<string, string>, ...keys: string[]): string | undefined => {
  for (const k of keys) if (o[k] !== undefined && o[k] !== '') return o[k];
  return undefined;
};

/**
 * The S3 client settings that reach the same store the engine reaches with a profile's Lance storage options
 * (`aws_endpoint`, `aws_region`, `aws_access_key_id`, …); what the options leave out comes from the standard AWS
 * environment variables and credential chain, as it does for the engine. Path-style addressing unless
 * `aws_virtual_hosted_style_request=true`, as in the engine.
 */
export function s3ClientConfig(options: Record<string, string>): S3ClientConfig {
  const endpoint =
    pick(options, 'aws_endpoint', 'endpoint', 'aws_endpoint_url', 'endpoint_url') ??
    process.env.AWS_ENDPOINT_URL_S3 ??
    process.env.AWS_ENDPOINT;
  const keyId = pick(options, 'aws_access_key_id', 'access_key_id');
  const secret = pick(options, 'aws_secret_access_key', 'secret_access_key');
  const token = pick(options, 'aws_session_token', 'session_token', 'aws_token', 'token');
  return {
    region: pick(options, 'aws_region', 'region') ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? 'us-east-1',
    ...(endpoint ? { endpoint } : {}),
    forcePathStyle: pick(options, 'aws_virtual_hosted_style_request', 'virtual_hosted_style_request') !== 'true',
    ...(keyId && secret ? { credentials: { accessKeyId: keyId, secretAccessKey: secret, ...(token ? { sessionToken: token } : {}) } } : {}),
    maxAttempts: 3,
  };
}

const isNotFound = (err: unknown): boolean => {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e.name === 'NotFound' || e.name === 'NoSuchKey' || e.$metadata?.httpStatusCode === 404;
};

/** An S3 (or S3-compatible) bucket under a prefix. */
export class S3Backend implements ObjectBackend {
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly prefix: string;

  constructor(profile: StorageProfile) {
    this.client = new S3Client(s3ClientConfig(profile.options));
    this.bucket = profile.bucket as string;
    this.prefix = profile.prefix ? `${profile.prefix}/` : '';
  }

  private full(key: string): string {
    return this.prefix + key.replace(/^\/+/, '');
  }

  async listRecursive(folder: string): Promise<StoredObject[]> {
    const base = this.full(folder).replace(/\/+$/, '');
    const prefix = base === '' ? '' : `${base}/`;
    const out: StoredObject[] = [];
    let token: string | undefined;
    do {
      const r = await this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token }));
      for (const o of r.Contents ?? []) {
        if (o.Key)
          out.push({ key: o.Key.slice(this.prefix.length), size: Number(o.Size ?? 0), modifiedMs: o.LastModified?.getTime() ?? 0 });
      }
      token = r.IsTruncated ? r.NextContinuationToken : undefined;
    } while (token);
    if (out.length === 0 && base !== '') {
      // A single object given as the folder is listed itself.
      try {
        const h = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: base }));
        out.push({ key: base.slice(this.prefix.length), size: Number(h.ContentLength ?? 0), modifiedMs: h.LastModified?.getTime() ?? 0 });
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
    return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async exists(folder: string): Promise<boolean> {
    const r = await this.client.send(
      new ListObjectsV2Command({ Bucket: this.bucket, Prefix: `${this.full(folder).replace(/\/+$/, '')}/` }),
    );
    return (r.Contents?.length ?? 0) > 0;
  }

  async read(key: string): Promise<Buffer> {
    const r = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.full(key) }));
    return Buffer.from(await (r.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray());
  }

  /** Read, then a conditional put (`If-None-Match: *`): 412 when the target exists. Manifests are small. */
  async publishIfAbsent(from: string, to: string): Promise<boolean> {
    const body = await this.read(from);
    try {
      await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: this.full(to), Body: body, IfNoneMatch: '*' }));
      return true;
    } catch (err) {
      const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      if (status === 412 || (err as { name?: string }).name === 'PreconditionFailed') return false;
      throw err;
    }
  }

  async removeObject(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.full(key) }));
  }

  async removeFolder(folder: string): Promise<void> {
    if (folder.replace(/\/+$/, '') === '') throw new Error('refusing to remove the whole storage root');
    for (;;) {
      const r = await this.client.send(
        new ListObjectsV2Command({ Bucket: this.bucket, Prefix: `${this.full(folder).replace(/\/+$/, '')}/` }),
      );
      const keys = (r.Contents ?? []).map((o) => o.Key).filter((k): k is string => !!k);
      if (keys.length === 0) return;
      const d = await this.client.send(
        new DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: keys.map((Key) => ({ Key })), Quiet: true } }),
      );
      if (d.Errors?.length) throw new Error(`could not delete ${d.Errors.length} objects under ${folder}: ${d.Errors[0].Code ?? 'error'}`);
    }
  }

  async probe(): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
    } catch (err) {
      const e = err as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } };
      const status = e.$metadata?.httpStatusCode ? ` (HTTP ${e.$metadata.httpStatusCode})` : '';
      // Only the short form is kept: the SDK's error can carry request signatures and credentials.
      // eslint-disable-next-line preserve-caught-error
      throw new Error(`s3://${this.bucket}: ${e.name ?? 'error'}${status}: ${(e.message ?? '').slice(0, 200)}`);
    }
  }

  objectPath(key: string): string {
    return this.full(key);
  }

  /**
   * Whether the store refuses to create an object that exists (`If-None-Match: *` → 412), which Lance's commits rely
   * on: where it does not, two writers committing the same table version overwrite each other's commit. Creates a
   * probe object twice under `.lgw-probe/` and removes it.
   */
  async conditionalCreateHonoured(): Promise<boolean> {
    const key = this.full(`.lgw-probe/${Date.now()}-${Math.random().toString(36).slice(2)}`);
    const put = () => this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: 'probe', IfNoneMatch: '*' }));
    try {
      await put();
      try {
        await put();
        return false;
      } catch (err) {
        const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
        if (status === 412 || status === 409) return true;
        throw err;
      }
    } finally {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key })).catch(() => undefined);
    }
  }

  close(): void {
    this.client.destroy();
  }
}
