import { Injectable } from '@nestjs/common';
import { CatalogClient, UnitOfWork } from '../db/unit-of-work';

export type PendingKind = 'write' | 'cleanup';

/** What a pending record says when it is made. */
export interface PendingValues {
  id: string;
  databaseId: string;
  databaseName: string;
  location: string;
  kind: PendingKind;
  requestId: string | null;
  owner: string;
}

export interface PendingRow extends PendingValues {
  startedAt: Date;
  /** The writer's last sign of life. */
  heartbeatAt: Date;
}

/** Serialises claims across replicas, so two never take records of the same location (see claimStale). */
const CLAIM_LOCK_KEY = 72707370;

/**
 * pending_locations: storage work recorded before it starts (see the migration). Writers insert a record (often in
 * the statement that already runs before the write: see TablesRepository and DatabasesRepository), renew its
 * heartbeat, and delete it (or hand it to the table row) when done. The reclaimer claims records whose writer is gone.
 */
@Injectable()
export class PendingLocationsRepository {
  constructor(private readonly uow: UnitOfWork) {}

  private get db(): CatalogClient {
    return this.uow.db;
  }

  async insert(v: PendingValues): Promise<void> {
    await this.db.$executeRaw`
      INSERT INTO pending_locations (id, database_id, database_name, location, kind, request_id, owner)
      VALUES (${v.id}::uuid, ${v.databaseId}::uuid, ${v.databaseName}, ${v.location}, ${v.kind}, ${v.requestId}, ${v.owner})`;
  }

  /** Renews a writer's heartbeat; false when the record is no longer its own (taken over, or gone). */
  async heartbeat(id: string, owner: string): Promise<boolean> {
    const n = await this.db.$executeRaw`
      UPDATE pending_locations SET heartbeat_at = now() WHERE id = ${id}::uuid AND owner = ${owner} AND claimed_at IS NULL`;
    return n === 1;
  }

  /** Deletes a record if it is still the caller's; false when someone took it over. */
  async deleteOwned(id: string, owner: string): Promise<boolean> {
    const n = await this.db.$executeRaw`DELETE FROM pending_locations WHERE id = ${id}::uuid AND owner = ${owner}`;
    return n === 1;
  }

  /**
   * Takes over up to `limit` records whose writer has been silent for `ageMs` (and that no other reclaimer holds),
   * making `owner` their owner. Claims run one at a time across all replicas (a transaction-scoped advisory lock),
   * and a record is not taken while another record of the same location is held by another reclaimer, so two
   * replicas never work on one location; FOR UPDATE SKIP LOCKED keeps a claim from waiting on a writer's update.
   * Runs in the caller's unit of work, which scopes the lock.
   */
  async claimStale(owner: string, ageMs: number, limit: number): Promise<PendingRow[]> {
    if (!this.uow.inProgress) throw new Error('claimStale needs a unit of work (the advisory lock is transaction-scoped)');
    await this.db.$executeRaw`SELECT pg_advisory_xact_lock(${CLAIM_LOCK_KEY}::bigint)`;
    return this.db.$queryRaw<PendingRow[]>`
      UPDATE pending_locations p SET owner = ${owner}, claimed_at = now()
       WHERE p.id IN (
         SELECT q.id FROM pending_locations q
          WHERE q.heartbeat_at < now() - ${ageMs}::int * interval '1 millisecond'
            AND (q.claimed_at IS NULL OR q.claimed_at < now() - ${ageMs}::int * interval '1 millisecond')
            AND NOT EXISTS (
              SELECT 1 FROM pending_locations o
               WHERE md5(o.location) = md5(q.location) AND o.location = q.location AND o.id <> q.id
                 AND o.owner <> ${owner} AND o.claimed_at >= now() - ${ageMs}::int * interval '1 millisecond')
          ORDER BY q.started_at
          LIMIT ${limit}
          FOR UPDATE SKIP LOCKED)
      RETURNING p.id, p.database_id AS "databaseId", p.database_name AS "databaseName", p.location, p.kind,
                p.request_id AS "requestId", p.owner, p.started_at AS "startedAt", p.heartbeat_at AS "heartbeatAt"`;
  }

  /** Renews a reclaimer's hold on records it works on. */
  async renewClaims(ids: string[], owner: string): Promise<void> {
    if (ids.length === 0) return;
    await this.db.$executeRaw`
      UPDATE pending_locations SET claimed_at = now() WHERE id = ANY(${ids}::uuid[]) AND owner = ${owner}`;
  }

  /** Gives claimed records back (to be tried again on a later round). */
  async release(ids: string[], owner: string): Promise<void> {
    if (ids.length === 0) return;
    await this.db.$executeRaw`
      UPDATE pending_locations SET claimed_at = NULL WHERE id = ANY(${ids}::uuid[]) AND owner = ${owner}`;
  }

  /** Whether a live writer (heartbeat within `ageMs`, not taken over) has a record of this location. */
  async liveWriterAt(location: string, excludeIds: string[], ageMs: number): Promise<boolean> {
    const rows = await this.db.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM pending_locations
       WHERE md5(location) = md5(${location}) AND location = ${location} AND NOT (id = ANY(${excludeIds}::uuid[]))
         AND claimed_at IS NULL AND heartbeat_at >= now() - ${ageMs}::int * interval '1 millisecond'`;
    return rows[0].n > 0;
  }

  /**
   * Whether a catalog table row uses this location (a live table: never reclaimed), or a soft-dropped table keeps
   * its data there until its purge (docs/soft-delete.md): counted as live too.
   */
  async tableAt(location: string): Promise<boolean> {
    const rows = await this.db.$queryRaw<{ n: number }[]>`
      SELECT (SELECT count(*) FROM tables WHERE md5(location) = md5(${location}) AND location = ${location})::int
           + (SELECT count(*) FROM dropped_tables WHERE md5(location) = md5(${location}) AND location = ${location})::int AS n`;
    return rows[0].n > 0;
  }

  async databaseNameOf(id: string): Promise<string | null> {
    return (await this.db.database.findUnique({ where: { id }, select: { name: true } }))?.name ?? null;
  }

  async databaseNamed(name: string): Promise<boolean> {
    return (await this.db.database.count({ where: { name } })) > 0;
  }

  /** Whether any record (a write in progress, a clean-up to do) names this location. */
  async pendingAt(location: string): Promise<boolean> {
    const rows = await this.db.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM pending_locations WHERE md5(location) = md5(${location}) AND location = ${location}`;
    return rows[0].n > 0;
  }

  /** Whether a database folder is still being deleted (a clean-up record of it exists). */
  async cleanupPending(location: string): Promise<boolean> {
    const rows = await this.db.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM pending_locations
       WHERE md5(location) = md5(${location}) AND location = ${location} AND kind = 'cleanup'`;
    return rows[0].n > 0;
  }

  // What `storage scan` needs: every location the catalog knows inside a database's folder.

  /** A database's id and storage profile by name; null when it does not exist. */
  async databaseByName(name: string): Promise<{ id: string; storageProfile: string } | null> {
    return this.db.database.findUnique({ where: { name }, select: { id: true, storageProfile: true } });
  }

  /**
   * Locations the catalog knows inside `folder` (a database's): its tables' folders, pending records, and the
   * folders running cascade drops have still to delete. Read whole: an operator command, not a request path.
   */
  async knownUnder(databaseId: string | null, folder: string): Promise<string[]> {
    const like = `${escapeLike(folder)}/%`;
    const tables = databaseId
      ? await this.db.$queryRaw<{ location: string }[]>`
          SELECT location FROM tables WHERE database_id = ${databaseId}::uuid
          UNION ALL SELECT location FROM dropped_tables WHERE database_id = ${databaseId}::uuid`
      : [];
    const pending = await this.db.$queryRaw<{ location: string }[]>`
      SELECT location FROM pending_locations WHERE location = ${folder} OR location LIKE ${like}`;
    const cascades = databaseId
      ? await this.db.$queryRaw<{ location: string }[]>`
          SELECT jsonb_array_elements_text(pending) AS location FROM catalog_transactions
           WHERE database_id = ${databaseId}::uuid AND status = 'Running'`
      : [];
    return [...tables, ...pending, ...cascades].map((r) => r.location);
  }

  /** Whether the catalog knows `prefix` or anything inside it (asked again just before a scan deletes it). */
  async knows(prefix: string): Promise<boolean> {
    const like = `${escapeLike(prefix)}/%`;
    const rows = await this.db.$queryRaw<{ known: boolean }[]>`
      SELECT EXISTS (SELECT 1 FROM tables WHERE location = ${prefix} OR location LIKE ${like})
          OR EXISTS (SELECT 1 FROM dropped_tables WHERE location = ${prefix} OR location LIKE ${like})
          OR EXISTS (SELECT 1 FROM pending_locations WHERE location = ${prefix} OR location LIKE ${like})
          OR EXISTS (SELECT 1 FROM catalog_transactions t, jsonb_array_elements_text(t.pending) AS l(location)
                      WHERE t.status = 'Running' AND (l.location = ${prefix} OR l.location LIKE ${like})) AS known`;
    return rows[0].known;
  }
}

/** A literal for LIKE (backslash is Postgres's default escape character). */
const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);
