import { Inject, Injectable } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { APP_CONFIG, AppConfig } from '../../../platform/config/config';
import { Errors } from '../../../platform/http/errors';
import { assertName } from '../../../platform/http/ids';
import { beforeHostSuffix } from '../../../platform/network/host-name';
import { DatabasesRepository } from './databases.repository';
import { lookupCache, purged, strBytes } from './lookup-cache';
import { networkRulesOf, quotasOf, rateLimitOf, TenantContext } from './tenant-context';

export const DATABASE_HEADER = 'x-service-database';
/** What the official LanceDB clients send (remote mode with a host override). */
export const DATABASE_HEADER_ALIAS = 'x-lancedb-database';
export const PREFIX_HEADER = 'x-service-database-prefix';
export const PREFIX_HEADER_ALIAS = 'x-lancedb-database-prefix';

export function headerValue(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const v = headers[name];
  const s = Array.isArray(v) ? v[0] : v;
  return s === undefined || s.trim() === '' ? undefined : s.trim();
}

export type ResolvedDatabase = TenantContext['database'];

/** An estimate of a cached database's heap bytes (its name and network rules beside fixed-size settings). */
const databaseBytes = (db: ResolvedDatabase): number =>
  600 + 2 * strBytes(db.name) + (db.network?.allowedCidrs ?? []).reduce((n, c) => n + strBytes(c), 0);

export interface RequestedDatabase {
  name: string;
  /** The database prefix: a separate catalog inside the database ('' for none), components joined by '/'. */
  catalog: string;
}

/**
 * Which database (tenant) and which catalog inside it a request addresses (docs/rest-contract.md §5):
 *  1. the `x-service-database` header (alias `x-lancedb-database`);
 *  2. else the host name, when TENANT_HOST_SUFFIX is set (`acme.gw.example.com` → `acme`); a header and a host
 *     that name different databases are a 400;
 *  3. `x-service-database-prefix` (alias `x-lancedb-database-prefix`, what the client sends for `db://acme/team1`)
 *     selects a separate catalog inside the database.
 */
@Injectable()
export class TenancyService {
  private readonly cache?: LRUCache<string, ResolvedDatabase>;
  /** By database id (boxed: the cache holds objects). */
  private readonly profiles?: LRUCache<string, { profile: string }>;
  private readonly managed?: LRUCache<string, { managed: boolean }>;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly databases: DatabasesRepository,
  ) {
    this.cache = lookupCache(config, 0.15, databaseBytes);
    this.profiles = lookupCache(config, 0.05, (p: { profile: string }) => 150 + strBytes(p.profile));
    this.managed = lookupCache(config, 0.05, () => 150);
  }

  requested(headers: Record<string, string | string[] | undefined>): RequestedDatabase {
    const fromHeader = headerValue(headers, DATABASE_HEADER) ?? headerValue(headers, DATABASE_HEADER_ALIAS);
    const fromHost = this.databaseFromHost(headerValue(headers, 'host'));
    if (fromHeader && fromHost && fromHeader !== fromHost) {
      throw Errors.invalidInput(
        `the ${DATABASE_HEADER} header ('${fromHeader}') and the host name ('${fromHost}') name different databases`,
      );
    }
    const name = fromHeader ?? fromHost;
    if (!name) {
      const host = this.config.tenantHostSuffix ? `, or use the host name <database>${this.config.tenantHostSuffix}` : '';
      throw Errors.invalidInput(`no database given: send the '${DATABASE_HEADER}: <database>' header${host}`);
    }
    return { name, catalog: this.catalogFrom(headerValue(headers, PREFIX_HEADER) ?? headerValue(headers, PREFIX_HEADER_ALIAS)) };
  }

  /** The database by name (cached like key lookups); 404 when it does not exist. */
  async resolve(name: string): Promise<ResolvedDatabase> {
    const cached = this.cache?.get(name);
    if (cached) return cached;
    const db = await this.databases.findByName(name);
    if (!db) throw Errors.namespaceNotFound(`database '${name}' not found`);
    const found = { id: db.id, name: db.name, rateLimit: rateLimitOf(db), quotas: quotasOf(db), network: networkRulesOf(db) };
    this.cache?.set(name, found);
    return found;
  }

  /**
   * The storage profile a database's new tables go to (cached like database lookups; a profile only changes while
   * the database holds no tables).
   */
  async storageProfileOf(db: ResolvedDatabase): Promise<string> {
    const cached = this.profiles?.get(db.id);
    if (cached) return cached.profile;
    const profile = await this.databases.storageProfileOf(db.id);
    if (!profile) throw Errors.namespaceNotFound(`database '${db.name}' not found`);
    this.profiles?.set(db.id, { profile });
    return profile;
  }

  /**
   * Whether a database's tables have catalog-managed versions (cached like the storage profile; the flag only
   * changes while the database holds no tables).
   */
  async managedVersioningOf(db: ResolvedDatabase): Promise<boolean> {
    const cached = this.managed?.get(db.id);
    if (cached) return cached.managed;
    const managed = await this.databases.managedVersioningOf(db.id);
    if (managed === null) throw Errors.namespaceNotFound(`database '${db.name}' not found`);
    this.managed?.set(db.id, { managed });
    return managed;
  }

  /** Drops what is cached of one database, or (no argument) of all. */
  forget(databaseId?: string): void {
    if (databaseId === undefined) {
      this.cache?.clear();
      this.profiles?.clear();
      this.managed?.clear();
      return;
    }
    this.profiles?.delete(databaseId);
    this.managed?.delete(databaseId);
    if (this.cache) for (const [name, db] of this.cache.entries()) if (db.id === databaseId) this.cache.delete(name);
  }

  /** Drops expired entries (IdentityCacheSync's rounds), so their memory goes back; their estimated bytes. */
  purgeStale(): number {
    return purged(this.cache) + purged(this.profiles) + purged(this.managed);
  }

  private databaseFromHost(host: string | undefined): string | undefined {
    const suffix = this.config.tenantHostSuffix;
    return suffix ? beforeHostSuffix(host, suffix) : undefined;
  }

  private catalogFrom(prefix: string | undefined): string {
    if (!prefix) return '';
    const parts = prefix.split('/').filter((p) => p !== '');
    for (const p of parts) {
      assertName(p, 'database prefix component');
      // A prefix names a storage folder: '.' and '..' would point at another catalog's folder.
      if (/^\.+$/.test(p)) throw Errors.invalidInput(`invalid database prefix component '${p}': it must not consist only of periods`);
    }
    return parts.join('/');
  }
}
