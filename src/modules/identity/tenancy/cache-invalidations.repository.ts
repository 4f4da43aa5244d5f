import { Injectable } from '@nestjs/common';
import { CatalogClient, UnitOfWork } from '../../../platform/db/unit-of-work';

/** What a replica must stop caching: one key, or everything of one database (its keys and its settings). */
export interface Invalidation {
  seq: string;
  databaseId: string | null;
  keyId: string | null;
}

/**
 * The rows that tell every replica what to forget (migration 20261130000000_cache_invalidations). Written in the
 * unit of work of the change they describe, so a rolled-back change forgets nothing and a committed one is always
 * announced.
 */
@Injectable()
export class CacheInvalidationsRepository {
  constructor(private readonly uow: UnitOfWork) {}

  private get db(): CatalogClient {
    return this.uow.db;
  }

  async record(what: { databaseId?: string; keyId?: string }): Promise<void> {
    await this.db.$executeRaw`INSERT INTO cache_invalidations (database_id, key_id)
      VALUES (${what.databaseId ?? null}::uuid, ${what.keyId ?? null}::uuid)`;
  }

  /** The rows of transactions that started less than `seconds` ago (by the catalog's clock), oldest first. */
  recent(seconds: number): Promise<Invalidation[]> {
    return this.uow.read<Invalidation>(
      `SELECT seq::text AS seq, database_id AS "databaseId", key_id AS "keyId" FROM cache_invalidations
        WHERE created_at > now() - make_interval(secs => $1) ORDER BY seq`,
      [seconds],
      'cache_invalidations_recent',
    );
  }

  /** Deletes rows older than `seconds`. */
  async trim(seconds: number): Promise<number> {
    return this.db.$executeRaw`DELETE FROM cache_invalidations WHERE created_at < now() - make_interval(secs => ${seconds})`;
  }
}
