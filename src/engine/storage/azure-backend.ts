import {
  AnonymousCredential,
  BlobServiceClient,
  ContainerClient,
  StoragePipelineOptions,
  StorageRetryPolicyType,
  StorageSharedKeyCredential,
} from '@azure/storage-blob';
// Types only (erased): @azure/core-auth comes with @azure/storage-blob, which does not re-export them.
import type { AccessToken, TokenCredential } from '@azure/core-auth';
import { StorageProfile } from '../../platform/config/storage-profile';
import { ObjectBackend, StoredObject } from './object-backend';
import { Env, resolveOptions, shortError, truthy } from './store-options';

/** The Lance (object_store `AzureConfigKey`) option keys the gateway's own Azure client reads, with their aliases. */
export const AZURE_KEYS = {
  accountName: ['azure_storage_account_name', 'account_name'],
  accessKey: [
    'azure_storage_account_key',
    'azure_storage_access_key',
    'azure_storage_master_key',
    'master_key',
    'account_key',
    'access_key',
  ],
  sasKey: ['azure_storage_sas_key', 'azure_storage_sas_token', 'sas_key', 'sas_token'],
  token: ['azure_storage_token', 'bearer_token', 'token'],
  useEmulator: ['azure_storage_use_emulator', 'use_emulator'],
  endpoint: ['azure_storage_endpoint', 'azure_endpoint', 'endpoint'],
  useFabricEndpoint: ['azure_use_fabric_endpoint', 'use_fabric_endpoint'],
  skipSignature: ['azure_skip_signature', 'skip_signature'],
  clientId: ['azure_storage_client_id', 'azure_client_id', 'client_id'],
  clientSecret: ['azure_storage_client_secret', 'azure_client_secret', 'client_secret'],
  tenantId: ['azure_storage_tenant_id', 'azure_storage_authority_id', 'azure_tenant_id', 'azure_authority_id', 'tenant_id', 'authority_id'],
  federatedTokenFile: ['azure_federated_token_file', 'federated_token_file'],
  useAzureCli: ['azure_use_azure_cli', 'use_azure_cli'],
} as const;

/** Azurite's (and the legacy emulator's) well-known account and key: public values, the same in object_store. */
export const AZURE_EMULATOR_ACCOUNT = 'devstoreaccount1';
export const AZURE_EMULATOR_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

export type AzureAuth =
  | { kind: 'shared_key'; accountName: string; accountKey: string }
  | { kind: 'sas'; sas: string }
  | { kind: 'bearer'; token: string }
  | { kind: 'anonymous' };

export interface AzureClientConfig {
  /** The blob service URL of the account (for the emulator: `<AZURITE_BLOB_STORAGE_URL>/<account>`), no trailing slash. */
  accountUrl: string;
  account: string;
  emulator: boolean;
  auth: AzureAuth;
}

/**
 * The account URL and credential that reach the same store the engine reaches with a profile's Lance storage options,
 * decided as object_store's MicrosoftAzureBuilder decides: with `azure_storage_use_emulator` the account defaults to
 * Azurite's well-known one at AZURITE_BLOB_STORAGE_URL (default http://127.0.0.1:10000); otherwise the account is
 * required and `azure_storage_endpoint` (else https://<account>.blob.core.windows.net) is its URL. Credentials in the
 * engine's order: bearer token, account key, SAS token; `azure_skip_signature` sends none. Missing options come from
 * the AZURE_* environment variables (AZURE_STORAGE_ACCOUNT_NAME, AZURE_STORAGE_ACCOUNT_KEY, …).
 * Entra ID credentials (client secret, workload or managed identity, Azure CLI) are not available to the gateway's own
 * client (they need @azure/identity): they are refused here with the keys to use instead. Errors name keys, never values.
 */
export function azureClientConfig(options: Record<string, string>, env: Env = process.env): AzureClientConfig {
  const o = resolveOptions(AZURE_KEYS, options, env, 'AZURE_');
  const skip = truthy(o.skipSignature, 'azure_skip_signature');
  if (truthy(o.useEmulator, 'azure_storage_use_emulator')) {
    const account = o.accountName ?? AZURE_EMULATOR_ACCOUNT;
    const base = (env.AZURITE_BLOB_STORAGE_URL || 'http://127.0.0.1:10000').replace(/\/+$/, '');
    const auth: AzureAuth = skip
      ? { kind: 'anonymous' }
      : o.accessKey
        ? { kind: 'shared_key', accountName: account, accountKey: o.accessKey }
        : o.token
          ? { kind: 'bearer', token: o.token }
          : o.sasKey
            ? { kind: 'sas', sas: o.sasKey }
            : { kind: 'shared_key', accountName: account, accountKey: AZURE_EMULATOR_KEY };
    return { accountUrl: `${checkedUrl(base, 'AZURITE_BLOB_STORAGE_URL')}/${account}`, account, emulator: true, auth };
  }
  const account = o.accountName;
  if (!account) throw new Error('azure_storage_account_name (or AZURE_STORAGE_ACCOUNT_NAME) is required for az:// roots');
  const accountUrl = checkedUrl(
    (
      o.endpoint ??
      (truthy(o.useFabricEndpoint, 'azure_use_fabric_endpoint')
        ? `https://${account}.blob.fabric.microsoft.com`
        : `https://${account}.blob.core.windows.net`)
    ).replace(/\/+$/, ''),
    'azure_storage_endpoint',
  );
  let auth: AzureAuth;
  if (skip) auth = { kind: 'anonymous' };
  else if (o.token) auth = { kind: 'bearer', token: o.token };
  else if (o.accessKey) auth = { kind: 'shared_key', accountName: account, accountKey: o.accessKey };
  else if (o.clientId && o.tenantId && (o.federatedTokenFile || o.clientSecret))
    throw new Error(
      'Entra ID service principals (azure_client_id/azure_tenant_id) are not supported by the gateway; set azure_storage_account_key or azure_storage_sas_key',
    );
  else if (o.sasKey) auth = { kind: 'sas', sas: o.sasKey };
  else
    throw new Error(
      'no Azure credential the gateway can use: set azure_storage_account_key, azure_storage_sas_key or azure_storage_token (or AZURE_STORAGE_ACCOUNT_KEY …); managed identity and Azure CLI are not supported',
    );
  return { accountUrl, account, emulator: false, auth };
}

function checkedUrl(url: string, key: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error(`${key}: not a URL`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`${key}: must be an http(s) URL`);
  if (u.search || u.hash) throw new Error(`${key}: must not carry a query or fragment`);
  return url;
}

/** A fixed bearer token as a TokenCredential (object_store does not refresh it either). */
function staticToken(token: string): TokenCredential {
  return { getToken: async (): Promise<AccessToken> => ({ token, expiresOnTimestamp: Date.now() + 3_600_000 }) };
}

/** Few quick retries: a store that does not answer should show on /readyz in seconds, not minutes. */
const PIPELINE: StoragePipelineOptions = {
  retryOptions: {
    retryPolicyType: StorageRetryPolicyType.EXPONENTIAL,
    maxTries: 3,
    retryDelayInMs: 200,
    maxRetryDelayInMs: 2000,
    tryTimeoutInMs: 60_000,
  },
  userAgentOptions: { userAgentPrefix: 'lance-gateway' },
};

/** The container client for a config from azureClientConfig. */
export function azureContainerClient(cfg: AzureClientConfig, container: string): ContainerClient {
  const a = cfg.auth;
  if (a.kind === 'sas')
    return new BlobServiceClient(`${cfg.accountUrl}?${a.sas.replace(/^\?/, '')}`, new AnonymousCredential(), PIPELINE).getContainerClient(
      container,
    );
  const credential =
    a.kind === 'shared_key'
      ? new StorageSharedKeyCredential(a.accountName, a.accountKey)
      : a.kind === 'bearer'
        ? staticToken(a.token)
        : new AnonymousCredential();
  return new BlobServiceClient(cfg.accountUrl, credential, PIPELINE).getContainerClient(container);
}

const DELETE_CONCURRENCY = 16;

/** An Azure Blob Storage container under a prefix (az://container/prefix). */
export class AzureBackend implements ObjectBackend {
  private readonly client?: ContainerClient;
  private readonly configError?: string;
  private readonly container: string;
  private readonly prefix: string;

  /** A configuration mistake does not throw here: every operation (and so /readyz) reports it instead. */
  constructor(profile: StorageProfile) {
    this.container = profile.bucket as string;
    this.prefix = profile.prefix ? `${profile.prefix}/` : '';
    try {
      this.client = azureContainerClient(azureClientConfig(profile.options), this.container);
    } catch (err) {
      this.configError = (err as Error).message;
    }
  }

  private c(): ContainerClient {
    if (!this.client) throw new Error(`az://${this.container}: ${this.configError}`);
    return this.client;
  }

  private full(key: string): string {
    return this.prefix + key.replace(/^\/+/, '');
  }

  /** Every blob under a prefix, without the directory markers of hierarchical-namespace (ADLS Gen2) accounts. */
  private async *blobs(prefix: string): AsyncGenerator<{ name: string; size: number; modifiedMs: number; isDir: boolean }> {
    for await (const page of this.c().listBlobsFlat({ prefix, includeMetadata: true }).byPage({ maxPageSize: 5000 })) {
      for (const b of page.segment.blobItems) {
        yield {
          name: b.name,
          size: Number(b.properties.contentLength ?? 0),
          modifiedMs: b.properties.lastModified?.getTime() ?? 0,
          isDir: b.metadata?.hdi_isfolder === 'true',
        };
      }
    }
  }

  async listRecursive(folder: string): Promise<StoredObject[]> {
    const base = this.full(folder);
    const out: StoredObject[] = [];
    if (base !== '' && !base.endsWith('/')) {
      try {
        const p = await this.c().getBlobClient(base).getProperties();
        if (p.metadata?.hdi_isfolder !== 'true')
          out.push({ key: base.slice(this.prefix.length), size: Number(p.contentLength ?? 0), modifiedMs: p.lastModified?.getTime() ?? 0 });
      } catch (err) {
        if ((err as { statusCode?: number }).statusCode !== 404) throw err;
      }
    }
    const under = base === '' || base.endsWith('/') ? base : `${base}/`;
    for await (const b of this.blobs(under))
      if (!b.isDir) out.push({ key: b.name.slice(this.prefix.length), size: b.size, modifiedMs: b.modifiedMs });
    return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async exists(folder: string): Promise<boolean> {
    const page = await this.c()
      .listBlobsFlat({ prefix: `${this.full(folder)}/` })
      .byPage({ maxPageSize: 1 })
      .next();
    return !page.done && page.value.segment.blobItems.length > 0;
  }

  async read(key: string): Promise<Buffer> {
    return this.c().getBlobClient(this.full(key)).downloadToBuffer();
  }

  async removeObject(key: string): Promise<void> {
    await this.c().getBlobClient(this.full(key)).deleteIfExists({ deleteSnapshots: 'include' });
  }

  async removeFolder(folder: string): Promise<void> {
    if (folder.replace(/\/+$/, '') === '') throw new Error('refusing to remove the whole storage root');
    const under = `${this.full(folder).replace(/\/+$/, '')}/`;
    // Files first (in parallel), then hierarchical-namespace directory markers deepest first; again until nothing is left.
    for (let pass = 0; ; pass++) {
      const files: string[] = [];
      const dirs: string[] = [];
      for await (const b of this.blobs(under)) (b.isDir ? dirs : files).push(b.name);
      if (files.length === 0 && dirs.length === 0) return;
      if (pass >= 3) throw new Error(`could not delete ${files.length + dirs.length} objects under ${folder}`);
      let next = 0;
      const worker = async (): Promise<void> => {
        while (next < files.length) await this.c().getBlobClient(files[next++]).deleteIfExists({ deleteSnapshots: 'include' });
      };
      await Promise.all(Array.from({ length: Math.min(DELETE_CONCURRENCY, files.length) }, worker));
      dirs.sort((a, b) => b.split('/').length - a.split('/').length);
      for (const d of dirs) await this.c().getBlobClient(d).deleteIfExists();
    }
  }

  async probe(): Promise<void> {
    const client = this.c();
    try {
      await client.listBlobsFlat({ prefix: this.prefix }).byPage({ maxPageSize: 1 }).next();
    } catch (err) {
      // Only the short form is kept: the SDK's error can carry request signatures and credentials.
      // eslint-disable-next-line preserve-caught-error
      throw new Error(`az://${this.container}: ${shortError(err)}`);
    }
  }

  objectPath(key: string): string {
    return this.full(key);
  }
}
