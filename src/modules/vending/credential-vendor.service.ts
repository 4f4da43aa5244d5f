import { createHash } from 'node:crypto';
import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import type { STSClient, STSClientConfig } from '@aws-sdk/client-sts';
// Loaded on the first temporary vending only (most deployments never assume a role).
const stsSdk = (): typeof import('@aws-sdk/client-sts') => require('@aws-sdk/client-sts');
import { LRUCache } from 'lru-cache';
import { Errors } from '../../platform/http/errors';
import { APP_CONFIG, AppConfig } from '../../platform/config/config';
import { hintCache } from '../../platform/runtime/hint-cache';
import type { StorageProfile, VendAccess } from '../../platform/config/storage-profile';

/** The table a credential is vended for: its URI (`s3://bucket/prefix/db/uuid.lance`) and object key prefix. */
export interface VendTable {
  uri: string;
  /** The object key prefix under the bucket, without leading slash: `prefix/db/uuid.lance`. */
  key: string;
}

/**
 * Lance storage option keys a temporary credential is answered with (the names Lance's own AWS credential vendor,
 * rust/lance-namespace-impls, uses; `expires_at_millis` is what the official client's storage-options provider reads
 * to know when to ask the namespace again).
 */
export const VENDED_KEYS = ['aws_access_key_id', 'aws_secret_access_key', 'aws_session_token', 'expires_at_millis'] as const;

/** Aliases Lance / object_store accept for the S3 credential keys: removed from client options before overlaying. */
const CREDENTIAL_ALIASES = new Set([
  'aws_access_key_id',
  'access_key_id',
  'aws_secret_access_key',
  'secret_access_key',
  'aws_session_token',
  'aws_token',
  'session_token',
  'token',
  'expires_at_millis',
]);

/** A cached credential is handed out only while more than max(5 min, 10 % of its lifetime) remains. */
const REFRESH_MARGIN_MS = 5 * 60_000;
const REFRESH_FRACTION = 0.1;
/** STS must answer within this; a hanging STS must not hang describe/declare. */
const STS_REQUEST_TIMEOUT_MS = 10_000;
const STS_CONNECT_TIMEOUT_MS = 5_000;

interface Vended {
  options: Record<string, string>;
  expiresAtMs: number;
  /** When the cached entry stops being handed out (a fresh one is fetched instead). */
  refreshAtMs: number;
}

/** A vended entry's estimated size: its options' keys and values, and the two times. */
function vendedBytes(v: Vended): number {
  let bytes = 16;
  for (const [k, val] of Object.entries(v.options)) bytes += 32 + k.length + val.length;
  return bytes;
}

/** The session policy for one table: objects under `key/` only, read-only unless `access` is write. */
export function sessionPolicy(bucket: string, key: string, access: VendAccess): Record<string, unknown> {
  const objects = `arn:aws:s3:::${bucket}/${key}/*`;
  const bucketArn = `arn:aws:s3:::${bucket}`;
  const statements: Record<string, unknown>[] = [
    {
      Effect: 'Allow',
      Action: 's3:ListBucket',
      Resource: bucketArn,
      Condition: { StringLike: { 's3:prefix': [`${key}/*`, key] } },
    },
    { Effect: 'Allow', Action: 's3:GetBucketLocation', Resource: bucketArn },
    { Effect: 'Allow', Action: ['s3:GetObject', 's3:GetObjectVersion'], Resource: objects },
  ];
  if (access === 'write') {
    statements.push({
      Effect: 'Allow',
      Action: ['s3:PutObject', 's3:DeleteObject', 's3:AbortMultipartUpload'],
      Resource: objects,
    });
  }
  return { Version: '2012-10-17', Statement: statements };
}

/** `lance-gw-<r|w>-<hash>`: ≤ 64 chars from [\w+=,.@-], stable per table and access (visible in CloudTrail). */
export function roleSessionName(profile: StorageProfile, key: string, access: VendAccess): string {
  const h = createHash('sha256')
    .update(`${profile.name}\0${profile.bucket ?? ''}\0${key}`)
    .digest('hex')
    .slice(0, 24);
  return `lance-gw-${access === 'write' ? 'w' : 'r'}-${h}`;
}

/**
 * Credential vending (issue 11): the `storage_options` that declare, describe and create answers carry so that a
 * namespace-mode client reads and writes exactly one table itself.
 *
 * - `requested === false` (the client sent `vend_credentials: false`) or `profile.vend === false`: nothing.
 * - Temporary vending (an S3 profile with `sts`): STS AssumeRole with the server's own credentials (from the profile's
 *   options, else the SDK's default chain) and an inline session policy limited to the table's prefix — read-only
 *   for read access. Answered as the profile's client options overlaid with the temporary keys and
 *   `expires_at_millis`; cached per (profile, table, access) until shortly before expiry; concurrent misses share one
 *   STS call.
 * - Static vending: a copy of the profile's client options; none when it has none (the safe default).
 *
 * The server's own `options` are never answered and never logged.
 */
@Injectable()
export class CredentialVendor implements OnApplicationShutdown {
  private readonly log = new Logger('CredentialVendor');
  /** Per (profile, table, access), bounded by memory (TABLE_HINT_CACHE_BYTES). */
  private readonly cache: LRUCache<string, Vended>;
  private readonly inFlight = new Map<string, Promise<Vended>>();
  /** One STS client per profile object (profiles are parsed once at start-up and never change). */
  private readonly clients = new Map<StorageProfile, STSClient>();

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.cache = hintCache<Vended>(config.tableHintCacheBytes, vendedBytes);
  }

  /**
   * `tableOnly`: only credentials confined to the table (STS); a profile's static client options, which reach every
   * table of the store, are then not vended (a credential narrowed by grants, docs/access-control.md).
   */
  async vend(
    profile: StorageProfile,
    table: VendTable,
    access: VendAccess,
    requested: boolean,
    tableOnly = false,
  ): Promise<Record<string, string> | undefined> {
    if (requested === false || profile.vend === false) return undefined;
    if (profile.sts && profile.scheme === 's3') return { ...(await this.temporary(profile, table, access)).options };
    return profile.clientOptions && !tableOnly ? { ...profile.clientOptions } : undefined;
  }

  onApplicationShutdown(): void {
    for (const c of this.clients.values()) c.destroy();
    this.clients.clear();
  }

  /** Synchronous up to the in-flight registration, so concurrent misses for one key always share a call. */
  private temporary(profile: StorageProfile, table: VendTable, access: VendAccess): Promise<Vended> {
    const { bucket, key } = this.locate(profile, table);
    const cacheKey = `${profile.name}\0${bucket}\0${key}\0${access}`;
    const hit = this.cache.get(cacheKey);
    if (hit && Date.now() < hit.refreshAtMs) return Promise.resolve(hit);
    const pending = this.inFlight.get(cacheKey);
    if (pending) return pending;
    const call = this.assumeRole(profile, bucket, key, access)
      .then((v) => {
        this.cache.set(cacheKey, v);
        return v;
      })
      .finally(() => this.inFlight.delete(cacheKey));
    this.inFlight.set(cacheKey, call);
    return call;
  }

  /** The bucket and key the policy is written for; refuses anything that would widen it. */
  private locate(profile: StorageProfile, table: VendTable): { bucket: string; key: string } {
    const bucket = profile.bucket;
    const key = table.key.replace(/^\/+|\/+$/g, '');
    // Plain Errors: these are programming errors (the 500 path), never a client's input.
    if (!bucket) throw new Error(`storage profile '${profile.name}' has no bucket to vend credentials for`);
    if (!key) throw new Error('refusing to vend credentials for an empty table key (that would cover the whole bucket)');
    if (/[*?]|\$\{/.test(key)) throw new Error('refusing to vend credentials for a table key holding IAM wildcards or policy variables');
    if (table.uri.replace(/\/+$/, '') !== `s3://${bucket}/${key}`) {
      throw new Error(`table uri does not match the key under bucket '${bucket}' of profile '${profile.name}'`);
    }
    return { bucket, key };
  }

  private async assumeRole(profile: StorageProfile, bucket: string, key: string, access: VendAccess): Promise<Vended> {
    const sts = profile.sts!;
    const client = this.client(profile);
    let out;
    try {
      out = await client.send(
        new (stsSdk().AssumeRoleCommand)({
          RoleArn: sts.roleArn,
          RoleSessionName: roleSessionName(profile, key, access),
          DurationSeconds: sts.durationSeconds,
          ExternalId: sts.externalId || undefined,
          Policy: JSON.stringify(sessionPolicy(bucket, key, access)),
        }),
      );
    } catch (err) {
      const e = err as Error & { $metadata?: { httpStatusCode?: number }; Code?: string };
      // Name, status and STS's message (which names principals and roles, never keys); no options, no credentials.
      this.log.warn(
        `STS AssumeRole failed for profile '${profile.name}' role ${sts.roleArn} (table key ${key}, ${access}): ` +
          `${e.name ?? 'Error'}${e.$metadata?.httpStatusCode ? ` HTTP ${e.$metadata.httpStatusCode}` : ''}: ${e.message}`,
      );
      throw Errors.serviceUnavailable(
        `temporary storage credentials cannot be issued right now (the security token service refused or did not answer: ` +
          `${e.name ?? 'Error'}); retry later, or ask with vend_credentials=false`,
      );
    }
    const c = out.Credentials;
    if (!c?.AccessKeyId || !c.SecretAccessKey || !c.SessionToken || !c.Expiration) {
      this.log.warn(`STS AssumeRole for profile '${profile.name}' role ${sts.roleArn} answered without complete credentials`);
      throw Errors.serviceUnavailable(
        'temporary storage credentials cannot be issued right now (incomplete answer from the security token service)',
      );
    }
    const now = Date.now();
    const expiresAtMs = c.Expiration.getTime();
    const lifetime = Math.max(0, expiresAtMs - now);
    const refreshAtMs = expiresAtMs - Math.max(REFRESH_MARGIN_MS, lifetime * REFRESH_FRACTION);
    const options: Record<string, string> = {};
    for (const [k, v] of Object.entries(profile.clientOptions ?? {})) if (!CREDENTIAL_ALIASES.has(k)) options[k] = v;
    // The bucket's region is not a secret and the client needs it to sign; endpoints are not copied (the server's
    // endpoint may be an internal address), they belong in client_options.
    if (!('aws_region' in options) && !('region' in options)) {
      const region = profile.options.aws_region ?? profile.options.region;
      if (region) options.aws_region = region;
    }
    options.aws_access_key_id = c.AccessKeyId;
    options.aws_secret_access_key = c.SecretAccessKey;
    options.aws_session_token = c.SessionToken;
    options.expires_at_millis = String(expiresAtMs);
    this.log.debug(`vended ${access} credentials for profile '${profile.name}' table key ${key}, expiring ${c.Expiration.toISOString()}`);
    return { options, expiresAtMs, refreshAtMs };
  }

  private client(profile: StorageProfile): STSClient {
    let client = this.clients.get(profile);
    if (client) return client;
    const o = profile.options;
    const sts = profile.sts!;
    const accessKeyId = o.aws_access_key_id ?? o.access_key_id;
    const secretAccessKey = o.aws_secret_access_key ?? o.secret_access_key;
    const sessionToken = o.aws_session_token ?? o.aws_token ?? o.session_token ?? o.token;
    const config: STSClientConfig = {
      region: sts.region ?? o.aws_region ?? o.region ?? 'us-east-1',
      endpoint: sts.endpoint,
      maxAttempts: 2,
      requestHandler: { requestTimeout: STS_REQUEST_TIMEOUT_MS, connectionTimeout: STS_CONNECT_TIMEOUT_MS },
    };
    // Without keys in the profile the SDK's default chain (environment, shared files, web identity, instance role).
    if (accessKeyId && secretAccessKey) config.credentials = { accessKeyId, secretAccessKey, sessionToken };
    client = new (stsSdk().STSClient)(config);
    this.clients.set(profile, client);
    return client;
  }
}
