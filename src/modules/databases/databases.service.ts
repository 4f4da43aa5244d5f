import * as fs from 'node:fs';
import * as path from 'node:path';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../../platform/config/config';
import { Errors } from '../../platform/http/errors';
import { assertName } from '../../platform/http/ids';
import { isString, paginate } from '../../platform/http/pagination';
import type { AuditQuery, AuditTrailResponse } from '../audit';
import type { ApiKey, Database, IssuedApiKey, ListApiKeysResponse, ListDatabasesResponse } from './databases.schemas';
import { isUuid, PageRequest } from '../../platform/http/validation/fields';
import {
  Role,
  ApiKeyRow,
  ApiKeysService,
  KeyChange,
  KeyOptions,
  IdentityCaches,
  quotasOf,
  DatabaseChange,
  DatabaseRow,
  DatabasesRepository,
  QuotasInput,
  RateLimitInput,
} from '../identity';
import { UnitOfWork } from '../../platform/db/unit-of-work';
import { AuditContext, pendingAudit, AuditService } from '../audit';
import { PendingLocationsRepository } from '../../platform/cluster/pending-locations.repository';
import { PendingLocations } from '../../platform/cluster/pending-locations.service';
import { TableStorage } from '../../engine/storage/table-storage.service';
import { QuotaService } from '../metering';
import { DropPolicy } from './drop-policy.service';

/** Network rules as given (undefined: unchanged / none). */
type NetworkRulesInput = { allowedCidrs?: string[]; privateOnly?: boolean };

/** The operator's view: databases (tenants) and their API keys. */
@Injectable()
export class DatabasesService {
  private readonly log = new Logger('Databases');

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repo: DatabasesRepository,
    private readonly keys: ApiKeysService,
    private readonly storage: TableStorage,
    private readonly caches: IdentityCaches,
    private readonly audit: AuditService,
    private readonly pending: PendingLocations,
    private readonly pendingRepo: PendingLocationsRepository,
    private readonly uow: UnitOfWork,
    private readonly quotas: QuotaService,
    private readonly dropPolicy: DropPolicy,
  ) {}

  private present(d: DatabaseRow): Database {
    const known = this.config.storage.profiles.has(d.storageProfile);
    return {
      id: d.id,
      name: d.name,
      properties: d.properties,
      /** The database's own limit, or null when the gateway defaults apply. */
      rate_limit: d.rateLimitLimit && d.rateLimitWindowMs ? { limit: d.rateLimitLimit, window_ms: d.rateLimitWindowMs } : null,
      storage_profile: d.storageProfile,
      managed_versioning: d.managedVersioning,
      storage_root: known ? this.storage.uri(this.storage.databaseFolder(d.name, '', d.storageProfile)) : '(profile not configured)',
      quotas: (({ maxTables, maxNamespaces, maxStorageBytes, maxRowsPerWrite }) => ({
        max_tables: maxTables,
        max_namespaces: maxNamespaces,
        max_storage_bytes: maxStorageBytes,
        max_rows_per_write: maxRowsPerWrite,
      }))(this.quotas.effective(quotasOf(d))),
      drop_profile: (({ profile, retentionSeconds, source }) => ({ profile, retention_seconds: retentionSeconds, source }))(
        this.dropPolicy.effective(d),
      ),
      protected: d.protected ?? false,
      network_rules: { allowed_cidrs: d.allowedCidrs ?? [], private_only: d.privateOnly ?? false },
      created_at: new Date(d.createdAt).toISOString(),
    };
  }

  async create(
    name: string,
    properties: Record<string, string> = {},
    rateLimit: RateLimitInput = null,
    storageProfile?: string,
    managedVersioning = false,
    quotas: QuotasInput = {},
    network: NetworkRulesInput = {},
  ): Promise<Database> {
    assertName(name, 'database name');
    this.assertNetworkRules(network);
    const profile = this.storage.profile(storageProfile).name; // 400 for a profile that is not configured
    if (managedVersioning) this.assertCanManage(profile);
    // A database name is also its storage folder's name: one made only of periods would be '.'/'..'.
    if (/^\.+$/.test(name)) throw Errors.invalidInput(`invalid database name '${name}': it must not consist only of periods`);
    // A database of that name was deleted and its folder is not gone yet: the new one would share it.
    if (await this.pendingRepo.cleanupPending(this.storage.databaseFolder(name, '', profile))) {
      throw Errors.conflict(`database '${name}' is still being deleted (its storage is being removed); try again shortly`);
    }
    const row = await this.uow.run(async () => {
      const inserted = await this.repo.insert(name, properties, rateLimit, profile, managedVersioning, quotas);
      if (!inserted) throw Errors.conflict(`database '${name}' already exists`);
      const withRules =
        network.allowedCidrs?.length || network.privateOnly
          ? await this.repo.update(inserted.id, { allowedCidrs: network.allowedCidrs, privateOnly: network.privateOnly })
          : inserted;
      await this.audit.recordWithChange({ databaseId: inserted.id });
      return withRules;
    });
    return this.present(row);
  }

  async list(page: PageRequest): Promise<ListDatabasesResponse> {
    const { rows, ...next } = await paginate(page, this.config, {
      isKey: isString,
      fetch: (after, take) => this.repo.list(after, take),
      keyOf: (d: DatabaseRow) => d.name,
    });
    return { databases: rows.map((r) => this.present(r)), ...next };
  }

  async get(name: string): Promise<Database> {
    return this.present(await this.require(name));
  }

  /**
   * Changes a database's properties and/or rate limit. Every replica applies a new limit within
   * AUTH_CACHE_SYNC_MS (the limit travels with the cached credential and database lookups; docs/production.md).
   */
  async update(name: string, change: DatabaseChange): Promise<Database> {
    const db = await this.require(name);
    this.assertNetworkRules(change);
    if (change.storageProfile !== undefined) this.storage.profile(change.storageProfile); // 400 when not configured
    if (change.managedVersioning ?? db.managedVersioning) this.assertCanManage(change.storageProfile ?? db.storageProfile);
    const row = await this.uow.run(async () => {
      const profileChanges = change.storageProfile !== undefined && change.storageProfile !== db.storageProfile;
      const versioningChanges = change.managedVersioning !== undefined && change.managedVersioning !== db.managedVersioning;
      if (profileChanges || versioningChanges) {
        // Checked in the unit of work that changes it; a table declared at this moment is caught by the lock below.
        // A table's version history is either all in the catalog or all on storage, never half of each.
        await this.repo.lockForUpdate(db.id);
        if (await this.repo.holdsTables(db.id)) {
          const what = profileChanges ? 'its storage profile' : 'managed_versioning';
          throw Errors.conflict(`database '${name}' holds tables: ${what} cannot change (drop or deregister them first)`);
        }
      }
      const updated = await this.repo.update(db.id, change);
      await this.audit.recordWithChange({ databaseId: db.id });
      await this.caches.announce({ databaseId: db.id });
      return updated;
    });
    this.caches.forget({ databaseId: db.id });
    return this.present(row);
  }

  /**
   * Removes the database, everything in its catalog, its keys and its storage folder. The folder is recorded for
   * clean-up in the statement that deletes the database, then deleted (by the reclaimer, should this process die
   * first).
   */
  async delete(name: string, requestId?: string) {
    const db = await this.require(name);
    // Checked again in the statement that deletes it (a flag set meanwhile still wins).
    if (db.protected) throw Errors.conflict(`database '${name}' is protected: clear the flag (protected: false) before deleting it`);
    const v = this.pending.values(
      { databaseId: db.id, databaseName: db.name, requestId },
      this.storage.databaseFolder(db.name, '', db.storageProfile),
      'cleanup',
    );
    const deleted = await this.uow.run(async () => {
      if (!(await this.repo.deleteRecordingCleanup(db.id, v))) return false;
      // The record keeps the id of the database it describes (its trail is no longer listed once it is gone).
      await this.audit.recordWithChange({ databaseId: db.id });
      await this.caches.announce({ databaseId: db.id });
      return true;
    });
    if (!deleted) {
      if ((await this.repo.findByName(name))?.protected)
        throw Errors.conflict(`database '${name}' is protected: clear the flag (protected: false) before deleting it`);
      this.audit.nothingChanged(); // deleted meanwhile by someone else
      return;
    }
    this.caches.forget({ databaseId: db.id });
    await this.pending.cleanUp(this.pending.watch(v));
  }

  async issueKey(name: string, role: Role, options: KeyOptions = {}): Promise<IssuedApiKey> {
    if (options.expiresAt && options.expiresAt.getTime() <= Date.now()) throw Errors.invalidInput('expires_at must be in the future');
    const db = await this.require(name);
    const { key, secret } = await this.uow.run(async () => {
      const issued = await this.keys.issue(db.id, role, options);
      // What the key was made with, besides its id and role: only the fields given (never the secret).
      const { name: keyName, owner, expires_at, rate_limit, grants } = this.keyView(issued.key);
      const given = Object.entries({ name: keyName, owner, expires_at, rate_limit, grants }).filter(([, v]) => v !== null);
      await this.audit.recordWithChange({
        databaseId: db.id,
        details: { key_id: issued.key.id, role: issued.key.role, ...Object.fromEntries(given) },
      });
      return issued;
    });
    return this.issued(key, secret);
  }

  /**
   * Issues a key replacing an active one (same role, name, owner, expiry and limit; `rotated_from` the old id). The
   * old key keeps working until it is revoked, or for `overlapSeconds` at most when given.
   */
  async rotateKey(name: string, id: string, overlapSeconds?: number): Promise<IssuedApiKey> {
    const db = await this.require(name);
    if (!isUuid(id)) throw Errors.notFound(`API key '${id}' not found in database '${name}'`);
    const { key, secret } = await this.uow.run(async () => {
      const rotated = await this.keys.rotate(db.id, id, overlapSeconds);
      await this.audit.recordWithChange({
        databaseId: db.id,
        details: {
          key_id: rotated.key.id,
          rotated_from: id,
          ...(overlapSeconds !== undefined ? { overlap_seconds: overlapSeconds } : {}),
        },
      });
      // The old key's new expiry applies on every replica at once.
      if (overlapSeconds !== undefined) await this.caches.announce({ keyId: id });
      return rotated;
    });
    if (overlapSeconds !== undefined) this.caches.forget({ keyId: id });
    return this.issued(key, secret);
  }

  /** Changes a key's name, owner, expiry, rate limit or grants; every replica applies it within AUTH_CACHE_SYNC_MS. */
  async updateKey(name: string, id: string, change: KeyChange): Promise<ApiKey> {
    if (change.expiresAt && change.expiresAt.getTime() <= Date.now()) throw Errors.invalidInput('expires_at must be in the future');
    const db = await this.require(name);
    if (!isUuid(id)) throw Errors.notFound(`API key '${id}' not found in database '${name}'`);
    const after = await this.uow.run(async () => {
      const r = await this.keys.update(db.id, id, change);
      if (!r) throw Errors.notFound(`API key '${id}' not found in database '${name}'`);
      const view = (k: ApiKeyRow) => this.keyView(k);
      const [before, now] = [view(r.before), view(r.after)];
      const fields = ['name', 'owner', 'expires_at', 'rate_limit', 'grants'] as const;
      const changed = Object.fromEntries(
        fields.filter((f) => JSON.stringify(before[f]) !== JSON.stringify(now[f])).map((f) => [f, { from: before[f], to: now[f] }]),
      );
      await this.audit.recordWithChange({ databaseId: db.id, details: { key_id: id, changed } });
      await this.caches.announce({ keyId: id });
      return r.after;
    });
    this.caches.forget({ keyId: id });
    return this.keyView(after);
  }

  async listKeys(name: string): Promise<ListApiKeysResponse> {
    const db = await this.require(name);
    const keys = await this.keys.list(db.id);
    return { api_keys: keys.map((k) => this.keyView(k)) };
  }

  private keyFields(k: ApiKeyRow) {
    return {
      name: k.name,
      owner: k.owner,
      rate_limit: k.keyRateLimitLimit && k.keyRateLimitWindowMs ? { limit: k.keyRateLimitLimit, window_ms: k.keyRateLimitWindowMs } : null,
      rotated_from: k.rotatedFrom,
      grants: k.grants,
    };
  }

  private issued(key: ApiKeyRow, secret: string): IssuedApiKey {
    return {
      id: key.id,
      api_key: secret,
      role: key.role,
      description: key.description,
      created_at: key.createdAt.toISOString(),
      expires_at: key.expiresAt?.toISOString() ?? null,
      ...this.keyFields(key),
    };
  }

  private keyView(k: ApiKeyRow): ApiKey {
    return {
      id: k.id,
      role: k.role,
      description: k.description,
      created_at: k.createdAt.toISOString(),
      expires_at: k.expiresAt?.toISOString() ?? null,
      revoked_at: k.revokedAt?.toISOString() ?? null,
      ...this.keyFields(k),
      last_used_at: k.lastUsedAt?.toISOString() ?? null,
    };
  }

  /** Revokes a key: it stops working at once here, and within AUTH_CACHE_SYNC_MS on other replicas. */
  async revokeKey(name: string, id: string) {
    const db = await this.require(name);
    if (!isUuid(id)) throw Errors.notFound(`active API key '${id}' not found in database '${name}'`);
    await this.uow.run(async () => {
      if (!(await this.keys.revoke(db.id, id))) throw Errors.notFound(`active API key '${id}' not found in database '${name}'`);
      await this.audit.recordWithChange({ databaseId: db.id });
      await this.caches.announce({ keyId: id });
    });
    this.caches.forget({ keyId: id }); // after the commit too: no lookup in between may cache the key as still active
  }

  async auditTrail(name: string, q: AuditQuery): Promise<AuditTrailResponse> {
    const db = await this.require(name);
    const { action, actor, target, ...page } = q;
    return this.audit.list(db.id, page, { action, actor, target });
  }

  /**
   * First start of an empty catalog (embedded default, or BOOTSTRAP_DATABASE set): make a database and a write
   * key so a newcomer can connect at once. The secret goes to a file only its owner can read, never to the log.
   */
  async bootstrap(): Promise<void> {
    const name = this.config.bootstrapDatabase;
    if (!name || (await this.repo.count()) > 0) return;
    // The database, its first key and the record of both commit together.
    const made = await AuditContext.run(
      pendingAudit({ databaseName: name, actor: 'bootstrap', action: 'database.create', target: name }),
      () =>
        this.uow.run(async () => {
          const row = await this.repo.insert(name, {});
          if (!row) return null; // another replica bootstrapped at the same moment
          const issued = await this.keys.issue(row.id, 'write', { description: 'created on first start' });
          await this.audit.recordWithChange({ databaseId: row.id, details: { key_id: issued.key.id } });
          return issued;
        }),
    );
    if (!made) return;
    const { key, secret } = made;
    const file = path.join(this.config.dataDir, 'initial-api-key.json');
    fs.mkdirSync(this.config.dataDir, { recursive: true });
    fs.writeFileSync(file, JSON.stringify({ database: name, api_key: secret, key_id: key.id, role: 'write' }, null, 2) + '\n', {
      mode: 0o600,
    });
    this.log.log(`first start: created database '${name}' and a write key (id ${key.id}); its secret is in ${file}`);
  }

  /** A private-only database needs private endpoints to answer under: else nothing could reach it. */
  private assertNetworkRules(rules: NetworkRulesInput): void {
    if (rules.privateOnly && this.config.network.privateHostSuffixes.length === 0) {
      throw Errors.invalidInput('network_rules.private_only needs PRIVATE_HOST_SUFFIXES to be set on the gateway');
    }
  }

  /** Catalog-managed versions publish manifests put-if-absent: a store that cannot (GCS, Azure here) is a 400. */
  private assertCanManage(profile: string): void {
    if (!this.storage.canPublish(profile)) {
      throw Errors.invalidInput(
        `managed_versioning is not available on storage profile '${profile}' (${this.storage.profile(profile).scheme}): local and S3 stores only`,
      );
    }
  }

  /** The database by name, or 404. */
  async require(name: string): Promise<DatabaseRow> {
    const db = await this.repo.findByName(name);
    if (!db) throw Errors.notFound(`database '${name}' not found`);
    return db;
  }
}
