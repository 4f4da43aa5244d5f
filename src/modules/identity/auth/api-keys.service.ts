import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { APP_CONFIG, AppConfig } from '../../../platform/config/config';
import { Errors } from '../../../platform/http/errors';
import { lookupCache, NEGATIVE_TTL_MS, purged, strBytes } from '../tenancy/lookup-cache';
import { ApiKeyRow, ApiKeysRepository, KeyChange, KeyWithDatabase, Role } from './api-keys.repository';
import { Access, Grant, grantsProblem } from './grants';

/** What a new key carries besides its role (all optional). */
export interface KeyOptions {
  description?: string;
  expiresAt?: Date | null;
  name?: string | null;
  owner?: string | null;
  rateLimit?: { limit: number; windowMs: number } | null;
  /** Narrows the role to these grants (docs/access-control.md); absent or null: the role on the whole database. */
  grants?: Grant[] | null;
  rotatedFrom?: string;
}

/** 400 when grants hold more than the role allows, or `admin` elsewhere than on the database. */
function assertGrants(role: Role, grants: readonly Grant[]): void {
  const problem = grantsProblem(role, grants);
  if (problem) throw Errors.invalidInput(problem);
}

export const API_KEY_PREFIX = 'lgw_';

export const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/** Constant-time equality of two secrets (compares their fixed-length digests). */
export function secretsEqual(a: string, b: string): boolean {
  return timingSafeEqual(sha256(a), sha256(b));
}

export interface IssuedKey {
  key: ApiKeyRow;
  secret: string;
}

/**
 * API keys: 256-bit random secrets with a recognisable prefix, stored only as SHA-256 digests (a fast hash is
 * right for high-entropy secrets; there is nothing to brute-force). Lookup is by digest, then the digest is
 * compared in constant time.
 *
 * Lookups are cached per digest for AUTH_CACHE_TTL_MS (default 5 minutes; bounded by memory, AUTH_CACHE_MAX_MB): the
 * catalog query is most of a small request's cost, and a fleet's tenants must not each pay it on every request. A
 * change that must stop a cached lookup (a key revoked or changed, its database changed or deleted) is written to
 * cache_invalidations in the change's own transaction; this replica forgets at once, every other within
 * AUTH_CACHE_SYNC_MS (IdentityCacheSync). While a digest is being looked up, other requests with the same key wait
 * for that lookup instead of each running their own (every in-flight request of a busy key missed the cache together
 * when its entry expired).
 */
type CachedLookup = { row: KeyWithDatabase | null; access: Access | null };

/**
 * A found key with what it may do: its role's privileges narrowed by its grants, compiled once per lookup. (Not its
 * digest's bytes: a small Buffer kept per key can hold a slab of node's shared pool each; bench/runs/2026-11-29-seventh-vm.md.)
 */
const looked = (row: KeyWithDatabase | null): CachedLookup => ({ row, access: row ? Access.of(row.role, row.grants) : null });

/**
 * An estimate of a cached lookup's heap bytes (measured with heap snapshots: about 700 for a key without grants):
 * the entry, the row's fields, its network rules and its grants (twice: as given and compiled).
 */
function lookupBytes({ row }: CachedLookup): number {
  if (!row) return 200;
  let n = 600 + strBytes(row.databaseName);
  for (const c of row.allowedCidrs ?? []) n += strBytes(c);
  for (const g of row.grants ?? []) n += 2 * (200 + strBytes(JSON.stringify(g)));
  return n;
}

@Injectable()
export class ApiKeysService {
  private readonly cache?: LRUCache<string, CachedLookup>;
  /** Lookups under way, by digest (only with the cache on: with AUTH_CACHE_TTL_MS=0 every request looks for itself). */
  private readonly inFlight = new Map<string, Promise<CachedLookup>>();
  /** Bumped by forget(): a lookup that began before it is answered but not cached. */
  private generation = 0;

  private readonly ttlMs: number;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly keys: ApiKeysRepository,
  ) {
    this.cache = lookupCache(config, 0.75, lookupBytes);
    this.ttlMs = config.authCacheTtlMs;
  }

  async issue(databaseId: string, role: Role, options: KeyOptions = {}): Promise<IssuedKey> {
    if (options.grants) assertGrants(role, options.grants);
    const secret = API_KEY_PREFIX + randomBytes(32).toString('base64url');
    const key = await this.keys.insert({ id: randomUUID(), databaseId, hash: sha256(secret).toString('hex'), role, ...options });
    return { key, secret };
  }

  /**
   * Issues a key to replace an active one: same role, grants, name, owner, description, expiry and rate limit, recording
   * `rotated_from`. The old key stays valid until it is revoked, or for `overlapSeconds` at most when given (its
   * expiry is brought forward, never pushed back). Run it in the caller's unit of work.
   */
  async rotate(databaseId: string, id: string, overlapSeconds?: number): Promise<IssuedKey & { old: ApiKeyRow }> {
    const old = await this.keys.find(databaseId, id);
    if (!old) throw Errors.notFound(`API key '${id}' not found`);
    if (old.revokedAt) throw Errors.conflict(`API key '${id}' is revoked: it cannot be rotated (issue a new key instead)`);
    if (old.expiresAt && old.expiresAt.getTime() <= Date.now()) {
      throw Errors.conflict(`API key '${id}' has expired: it cannot be rotated (issue a new key instead)`);
    }
    const issued = await this.issue(databaseId, old.role, {
      description: old.description ?? undefined,
      expiresAt: old.expiresAt,
      name: old.name,
      owner: old.owner,
      rateLimit:
        old.keyRateLimitLimit && old.keyRateLimitWindowMs ? { limit: old.keyRateLimitLimit, windowMs: old.keyRateLimitWindowMs } : null,
      grants: old.grants,
      rotatedFrom: old.id,
    });
    if (overlapSeconds !== undefined) await this.keys.expireBy(old.id, new Date(Date.now() + overlapSeconds * 1000));
    return { ...issued, old };
  }

  /**
   * Changes a key's name, owner, expiry, rate limit or grants; null when it is not a key of that database. Grants
   * above the key's role are refused (400). The caller announces the change to every replica's cache
   * (IdentityCaches.announce, in its unit of work) and forgets it here after the commit.
   */
  async update(databaseId: string, id: string, change: KeyChange): Promise<{ before: ApiKeyRow; after: ApiKeyRow } | null> {
    const before = await this.keys.find(databaseId, id);
    if (!before) return null;
    if (change.grants) assertGrants(before.role, change.grants);
    const after = await this.keys.update(databaseId, id, change);
    return after ? { before, after } : null;
  }

  /** The active key for this secret (`digest`: its SHA-256, when the caller has it already), or null (unknown, revoked or expired). */
  async authenticate(secret: string, digest = sha256(secret)): Promise<{ row: Omit<KeyWithDatabase, 'hash'>; access: Access } | null> {
    const hex = digest.toString('hex');
    const hit = this.cache ? (this.cache.get(hex) ?? (await this.lookup(hex))) : looked(await this.keys.findByHash(hex));
    const { row, access } = hit;
    if (!row || !access || !timingSafeEqual(Buffer.from(row.hash, 'hex'), digest)) return null;
    if (row.revokedAt || (row.expiresAt && row.expiresAt.getTime() <= Date.now())) return null;
    return { row, access };
  }

  list(databaseId: string) {
    return this.keys.listByDatabase(databaseId);
  }

  /** Revokes a key (the caller announces and forgets it, as for update). */
  revoke(databaseId: string, id: string): Promise<boolean> {
    return this.keys.revoke(databaseId, id);
  }

  /**
   * Drops cached lookups: of one key, of one database's keys, or (no argument) all of them. A lookup under way
   * when this is called is answered but not cached.
   */
  forget(what?: { keyId?: string; databaseId?: string }): void {
    this.generation++;
    this.inFlight.clear();
    if (!this.cache) return;
    if (!what || (!what.keyId && !what.databaseId)) return this.cache.clear();
    for (const [digest, { row }] of this.cache.entries()) {
      if (row && (row.id === what.keyId || row.databaseId === what.databaseId)) this.cache.delete(digest);
    }
  }

  /** Drops expired lookups (IdentityCacheSync calls it every few seconds), so their memory goes back; their estimated bytes. */
  purgeStale(): number {
    return purged(this.cache);
  }

  /** One catalog lookup per digest at a time, cached when it ends unless forget() was called meanwhile. */
  private lookup(hex: string): Promise<CachedLookup> {
    const running = this.inFlight.get(hex);
    if (running) return running;
    const generation = this.generation;
    const p: Promise<CachedLookup> = this.keys
      .findByHash(hex)
      .then((row) => {
        const hit = looked(row);
        if (generation === this.generation) this.cache?.set(hex, hit, row ? undefined : { ttl: Math.min(NEGATIVE_TTL_MS, this.ttlMs) });
        return hit;
      })
      .finally(() => {
        if (this.inFlight.get(hex) === p) this.inFlight.delete(hex);
      });
    this.inFlight.set(hex, p);
    return p;
  }
}
