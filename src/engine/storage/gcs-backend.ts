import * as fs from 'node:fs';
import { Bucket, File, Storage, StorageOptions } from '@google-cloud/storage';
import { StorageProfile } from '../../platform/config/storage-profile';
import { ObjectBackend, StoredObject } from './object-backend';
import { Env, resolveOptions, shortError } from './store-options';

/** The Lance (object_store `GoogleConfigKey`) option keys the gateway's own GCS client reads, with their aliases. */
export const GCS_KEYS = {
  serviceAccount: ['google_service_account', 'service_account', 'google_service_account_path', 'service_account_path'],
  serviceAccountKey: ['google_service_account_key', 'service_account_key'],
  applicationCredentials: ['google_application_credentials', 'application_credentials'],
  baseUrl: ['google_base_url', 'base_url'],
} as const;

/** A service account file or key as object_store reads it, with its two emulator fields. */
interface ServiceAccountJson {
  type?: string;
  project_id?: string;
  client_email?: string;
  private_key?: string;
  /** object_store: the JSON API base URL (an emulator's, e.g. fake-gcs-server). */
  gcs_base_url?: string;
  /** object_store: send no token at all (emulators). */
  disable_oauth?: boolean;
  [k: string]: unknown;
}

function parseAccount(text: string, key: string): ServiceAccountJson {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new Error(`${key}: not valid JSON`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error(`${key}: must be a JSON object (a service account key)`);
  return v as ServiceAccountJson;
}

/**
 * The @google-cloud/storage settings that reach the same store the engine reaches with a profile's Lance storage
 * options, decided as object_store's GoogleCloudStorageBuilder decides: a service account (`google_service_account`,
 * a file path, or `google_service_account_key`, the JSON itself) first; else application default credentials
 * (`google_application_credentials`, a file path; else the library's own search: GOOGLE_APPLICATION_CREDENTIALS,
 * gcloud's file, the metadata server). A service account's `gcs_base_url` / `disable_oauth` (object_store's emulator
 * fields) and `google_base_url` set the endpoint and whether requests carry a token. Credentials given in the options
 * win over the environment (GOOGLE_SERVICE_ACCOUNT, GOOGLE_SERVICE_ACCOUNT_KEY, SERVICE_ACCOUNT,
 * GOOGLE_APPLICATION_CREDENTIALS, GOOGLE_BASE_URL). Errors name keys, never values. `readFile` reads a service
 * account file (injectable for tests).
 */
export function gcsClientConfig(
  options: Record<string, string>,
  env: Env = process.env,
  readFile: (path: string) => string = (p) => fs.readFileSync(p, 'utf8'),
): StorageOptions {
  const given = resolveOptions(GCS_KEYS, options, {}, 'GOOGLE_');
  const fromEnv = resolveOptions(GCS_KEYS, {}, env, 'GOOGLE_');
  // One source for the service account: the options when they name one, else the environment (as a whole).
  const sa =
    given.serviceAccount !== undefined || given.serviceAccountKey !== undefined
      ? { path: given.serviceAccount, key: given.serviceAccountKey }
      : { path: fromEnv.serviceAccount ?? (env.SERVICE_ACCOUNT || undefined), key: fromEnv.serviceAccountKey };
  if (sa.path !== undefined && sa.key !== undefined)
    throw new Error('set google_service_account (a file) or google_service_account_key (the JSON), not both');

  let account: ServiceAccountJson | undefined;
  if (sa.key !== undefined) account = parseAccount(sa.key, 'google_service_account_key');
  else if (sa.path !== undefined) {
    let text: string;
    try {
      text = readFile(sa.path);
    } catch (err) {
      // Only the short form is kept: the SDK's error can carry request signatures and credentials.
      // eslint-disable-next-line preserve-caught-error
      throw new Error(`google_service_account: cannot read the file (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    account = parseAccount(text, 'google_service_account');
  }

  const out: StorageOptions = { retryOptions: { autoRetry: true, maxRetries: 2, maxRetryDelay: 2, totalTimeout: 60 } };
  const base = given.baseUrl ?? fromEnv.baseUrl ?? account?.gcs_base_url;
  if (base !== undefined) {
    let u: URL;
    try {
      u = new URL(base);
    } catch {
      throw new Error('google_base_url / gcs_base_url: not a URL');
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('google_base_url / gcs_base_url: must be an http(s) URL');
    out.apiEndpoint = base.replace(/\/+$/, '');
    // With a custom endpoint the library sends no token unless told to; the engine sends one unless disable_oauth.
    out.useAuthWithCustomEndpoint = account?.disable_oauth !== true;
  }
  if (account) {
    if (account.disable_oauth !== true) out.credentials = account as StorageOptions['credentials'];
    if (typeof account.project_id === 'string' && account.project_id) out.projectId = account.project_id;
  } else {
    const adc = given.applicationCredentials ?? fromEnv.applicationCredentials;
    if (adc !== undefined) out.keyFilename = adc;
  }
  return out;
}

const DELETE_CONCURRENCY = 16;

/** A Google Cloud Storage bucket under a prefix (gs://bucket/prefix). */
export class GcsBackend implements ObjectBackend {
  private readonly bucketClient?: Bucket;
  private readonly configError?: string;
  private readonly bucket: string;
  private readonly prefix: string;

  /** A configuration mistake does not throw here: every operation (and so /readyz) reports it instead. */
  constructor(profile: StorageProfile) {
    this.bucket = profile.bucket as string;
    this.prefix = profile.prefix ? `${profile.prefix}/` : '';
    try {
      this.bucketClient = new Storage(gcsClientConfig(profile.options)).bucket(this.bucket);
    } catch (err) {
      this.configError = (err as Error).message;
    }
  }

  private b(): Bucket {
    if (!this.bucketClient) throw new Error(`gs://${this.bucket}: ${this.configError}`);
    return this.bucketClient;
  }

  private full(key: string): string {
    return this.prefix + key.replace(/^\/+/, '');
  }

  /** One page of objects under a prefix and the token for the next. */
  private async page(prefix: string, maxResults: number, pageToken?: string): Promise<{ files: File[]; next?: string }> {
    const [files, nextQuery] = await this.b().getFiles({ prefix, maxResults, pageToken, autoPaginate: false });
    return { files, next: (nextQuery as { pageToken?: string } | null | undefined)?.pageToken };
  }

  private stored(f: File): StoredObject {
    const updated = f.metadata.updated ? Date.parse(f.metadata.updated) : NaN;
    return {
      key: f.name.slice(this.prefix.length),
      size: Number(f.metadata.size ?? 0),
      modifiedMs: Number.isFinite(updated) ? updated : 0,
    };
  }

  async listRecursive(folder: string): Promise<StoredObject[]> {
    const base = this.full(folder);
    const out: StoredObject[] = [];
    if (base !== '' && !base.endsWith('/')) {
      // The folder as an object itself: listing sorts it first among the names it prefixes.
      const { files } = await this.page(base, 1);
      if (files[0]?.name === base) out.push(this.stored(files[0]));
    }
    const under = base === '' || base.endsWith('/') ? base : `${base}/`;
    let token: string | undefined;
    do {
      const r = await this.page(under, 1000, token);
      for (const f of r.files) out.push(this.stored(f));
      token = r.next;
    } while (token);
    return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async exists(folder: string): Promise<boolean> {
    return (await this.page(`${this.full(folder)}/`, 1)).files.length > 0;
  }

  async read(key: string): Promise<Buffer> {
    const [data] = await this.b().file(this.full(key)).download();
    return data;
  }

  async removeObject(key: string): Promise<void> {
    await this.b().file(this.full(key)).delete({ ignoreNotFound: true });
  }

  async removeFolder(folder: string): Promise<void> {
    if (folder.replace(/\/+$/, '') === '') throw new Error('refusing to remove the whole storage root');
    const under = `${this.full(folder).replace(/\/+$/, '')}/`;
    for (;;) {
      const { files } = await this.page(under, 1000);
      if (files.length === 0) return;
      let next = 0;
      const worker = async (): Promise<void> => {
        while (next < files.length) await files[next++].delete({ ignoreNotFound: true });
      };
      await Promise.all(Array.from({ length: Math.min(DELETE_CONCURRENCY, files.length) }, worker));
    }
  }

  async probe(): Promise<void> {
    this.b();
    try {
      await this.page(this.prefix, 1);
    } catch (err) {
      // Only the short form is kept: the SDK's error can carry request signatures and credentials.
      // eslint-disable-next-line preserve-caught-error
      throw new Error(`gs://${this.bucket}: ${shortError(err)}`);
    }
  }

  objectPath(key: string): string {
    return this.full(key);
  }
}
