import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { CatalogClient, UnitOfWork } from '../../platform/db/unit-of-work';

export type SinkKind = 'nats' | 'webhook';

/** Where a sink delivers: a webhook's URL, or NATS servers and the subject prefix. */
export interface SinkTarget {
  url: string;
  subject_prefix?: string;
}

export interface SinkRow {
  id: string;
  databaseId: string | null;
  /** The database's name (null for a fleet sink). */
  databaseName: string | null;
  name: string;
  kind: SinkKind;
  target: SinkTarget;
  secret: string | null;
  types: string[];
  namespacePrefix: string[];
  enabled: boolean;
  managedBy: 'api' | 'config';
  cursor: bigint;
  attempts: number;
  nextAttemptAt: Date | null;
  lastError: string | null;
  lastDeliveredAt: Date | null;
  deliveredCount: bigint;
  failedCount: bigint;
  deadLetters: number;
  createdAt: Date;
  /** As claimed: whether dead letters of it wait to be replayed. */
  hasReplays?: boolean;
}

/** What a sink is made with (its delivery state starts empty). */
export type NewSink = Pick<
  SinkRow,
  'databaseId' | 'name' | 'kind' | 'target' | 'secret' | 'types' | 'namespacePrefix' | 'enabled' | 'managedBy' | 'cursor'
>;

export interface SinkChange {
  name?: string;
  target?: SinkTarget;
  secret?: string;
  types?: string[];
  namespacePrefix?: string[];
  enabled?: boolean;
}

export interface DeadLetterRow {
  id: string;
  sinkId: string;
  eventId: string;
  eventSeq: bigint;
  event: Record<string, unknown>;
  attempts: number;
  lastError: string | null;
  state: 'dead' | 'replay';
  createdAt: Date;
}

const COLUMNS = `s.id, s.database_id AS "databaseId", d.name AS "databaseName", s.name, s.kind, s.target, s.secret, s.types,
  s.namespace_prefix AS "namespacePrefix", s.enabled, s.managed_by AS "managedBy", s.cursor, s.attempts,
  s.next_attempt_at AS "nextAttemptAt", s.last_error AS "lastError", s.last_delivered_at AS "lastDeliveredAt",
  s.delivered_count AS "deliveredCount", s.failed_count AS "failedCount", s.created_at AS "createdAt",
  (SELECT count(*)::int FROM event_dead_letters x WHERE x.sink_id = s.id) AS "deadLetters"`;
const FROM = `event_sinks s LEFT JOIN databases d ON d.id = s.database_id`;
const DEAD_COLUMNS = `id, sink_id AS "sinkId", event_id AS "eventId", event_seq AS "eventSeq", event, attempts,
  last_error AS "lastError", state, created_at AS "createdAt"`;

/**
 * event_sinks and event_dead_letters: the only place that reads or writes them (migration 20261129000000_event_outbox).
 * A sink is delivered to by one replica at a time: its lease (lease_owner, lease_expires_at) is taken with FOR UPDATE
 * SKIP LOCKED and every progress write is conditional on still holding it.
 */
@Injectable()
export class EventSinksRepository {
  constructor(private readonly uow: UnitOfWork) {}

  private get db(): CatalogClient {
    return this.uow.db;
  }

  /** Inserts a sink; null when the name is taken in its scope (the database, or the fleet). */
  async insert(s: NewSink): Promise<string | null> {
    const id = randomUUID();
    const n = await this.db.$executeRaw`
      INSERT INTO event_sinks (id, database_id, name, kind, target, secret, types, namespace_prefix, enabled, managed_by, cursor)
      VALUES (${id}::uuid, ${s.databaseId}::uuid, ${s.name}, ${s.kind}, ${JSON.stringify(s.target)}::jsonb, ${s.secret},
              ${s.types}::text[], ${s.namespacePrefix}::text[], ${s.enabled}, ${s.managedBy}, ${s.cursor}::bigint)
      ON CONFLICT DO NOTHING`;
    return n === 1 ? id : null;
  }

  /**
   * A fleet sink of EVENT_SINKS, made or brought in line with the config (its cursor kept): every replica does this
   * at start-up, so it is one statement that two replicas may run at once.
   */
  async upsertConfigured(s: NewSink): Promise<void> {
    await this.db.$executeRaw`
      INSERT INTO event_sinks (id, database_id, name, kind, target, secret, types, namespace_prefix, enabled, managed_by, cursor)
      VALUES (${randomUUID()}::uuid, NULL, ${s.name}, ${s.kind}, ${JSON.stringify(s.target)}::jsonb, ${s.secret},
              ${s.types}::text[], ${s.namespacePrefix}::text[], ${s.enabled}, 'config', ${s.cursor}::bigint)
      ON CONFLICT (COALESCE(database_id, '00000000-0000-0000-0000-000000000000'::uuid), name) DO UPDATE
        SET kind = EXCLUDED.kind, target = EXCLUDED.target, secret = EXCLUDED.secret, types = EXCLUDED.types,
            namespace_prefix = EXCLUDED.namespace_prefix, enabled = EXCLUDED.enabled, managed_by = 'config',
            cursor = CASE WHEN event_sinks.kind = EXCLUDED.kind THEN event_sinks.cursor ELSE EXCLUDED.cursor END,
            updated_at = now()`;
  }

  /** Deletes the config's fleet sinks whose names it no longer has. */
  async deleteConfiguredExcept(names: string[]): Promise<number> {
    return this.db.$executeRaw`
      DELETE FROM event_sinks WHERE database_id IS NULL AND managed_by = 'config' AND NOT (name = ANY(${names}::text[]))`;
  }

  async get(id: string): Promise<SinkRow | null> {
    const rows = await this.db.$queryRawUnsafe<SinkRow[]>(`SELECT ${COLUMNS} FROM ${FROM} WHERE s.id = $1::uuid`, id);
    return rows[0] ?? null;
  }

  /** One database's sinks, or (null) the fleet's, by name. */
  async list(databaseId: string | null): Promise<SinkRow[]> {
    return this.db.$queryRawUnsafe<SinkRow[]>(
      `SELECT ${COLUMNS} FROM ${FROM} WHERE s.database_id IS NOT DISTINCT FROM $1::uuid ORDER BY s.name`,
      databaseId,
    );
  }

  /** Applies a change; false when the new name is taken (nothing changed). */
  async update(id: string, c: SinkChange): Promise<boolean> {
    const n = await this.db.$executeRaw`
      UPDATE event_sinks SET
        name = COALESCE(${c.name ?? null}, name),
        target = COALESCE(${c.target ? JSON.stringify(c.target) : null}::jsonb, target),
        secret = COALESCE(${c.secret ?? null}, secret),
        types = COALESCE(${c.types ?? null}::text[], types),
        namespace_prefix = COALESCE(${c.namespacePrefix ?? null}::text[], namespace_prefix),
        enabled = COALESCE(${c.enabled ?? null}::boolean, enabled),
        attempts = CASE WHEN ${c.target !== undefined || c.enabled === true} THEN 0 ELSE attempts END,
        next_attempt_at = CASE WHEN ${c.target !== undefined || c.enabled === true} THEN NULL ELSE next_attempt_at END,
        updated_at = now()
      WHERE id = ${id}::uuid
        AND NOT EXISTS (SELECT 1 FROM event_sinks o WHERE o.id <> ${id}::uuid AND o.name = ${c.name ?? null}
                          AND o.database_id IS NOT DISTINCT FROM event_sinks.database_id)`;
    return n === 1;
  }

  async delete(id: string): Promise<boolean> {
    return (await this.db.$executeRaw`DELETE FROM event_sinks WHERE id = ${id}::uuid`) === 1;
  }

  /**
   * Leases up to `limit` enabled sinks that have work (events before `head` they have not been sent, and are not
   * waiting out a backoff; or dead letters asked for replay) and are not leased by another live replica, the furthest
   * behind first.
   */
  async claim(owner: string, leaseMs: number, limit: number, head: bigint): Promise<SinkRow[]> {
    // One statement: the lease taken and the sinks returned (their database's name and replays looked up beside).
    const rows = await this.db.$queryRawUnsafe<SinkRow[]>(
      `UPDATE event_sinks s SET lease_owner = $1, lease_expires_at = now() + $2::int * interval '1 millisecond'
         FROM (SELECT id FROM event_sinks c
                WHERE enabled AND (lease_expires_at IS NULL OR lease_expires_at < now() OR lease_owner = $1)
                  AND ((cursor < $3::bigint AND (next_attempt_at IS NULL OR next_attempt_at <= now()))
                       OR EXISTS (SELECT 1 FROM event_dead_letters x WHERE x.sink_id = c.id AND x.state = 'replay'))
                ORDER BY cursor, id
                LIMIT $4 FOR UPDATE SKIP LOCKED) due
        WHERE s.id = due.id
       RETURNING ${COLUMNS.replace('d.name AS', '(SELECT d.name FROM databases d WHERE d.id = s.database_id) AS')},
                 EXISTS (SELECT 1 FROM event_dead_letters x WHERE x.sink_id = s.id AND x.state = 'replay') AS "hasReplays"`,
      owner,
      leaseMs,
      head.toString(),
      limit,
    );
    return rows.sort((a, b) => (a.cursor < b.cursor ? -1 : a.cursor > b.cursor ? 1 : a.id.localeCompare(b.id)));
  }

  /**
   * Moves every database sink whose database has no event in (cursor, head] to `head` in one statement, so that a
   * fleet of quiet tenants' sinks is not leased and read one by one each time any tenant changes something. A sink
   * another replica is delivering to is left to it.
   */
  async skipIdle(head: bigint): Promise<number> {
    return this.db.$executeRaw`
      UPDATE event_sinks s SET cursor = ${head}::bigint
       WHERE s.enabled AND s.database_id IS NOT NULL AND s.cursor < ${head}::bigint
         AND (s.lease_expires_at IS NULL OR s.lease_expires_at < now())
         AND NOT EXISTS (SELECT 1 FROM outbox_events o
                          WHERE o.database_id = s.database_id AND o.seq > s.cursor AND o.seq <= ${head}::bigint)`;
  }

  /** Ends this replica's lease of a sink. */
  async release(id: string, owner: string): Promise<void> {
    await this.db.$executeRaw`
      UPDATE event_sinks SET lease_owner = NULL, lease_expires_at = NULL WHERE id = ${id}::uuid AND lease_owner = ${owner}`;
  }

  /**
   * Everything up to `cursor` is delivered (`delivered` of it just now); `release`: and the lease ends (the sink is
   * done for this round). False when the lease was lost.
   */
  async advance(id: string, owner: string, cursor: bigint, delivered: number, release = false): Promise<boolean> {
    const n = await this.db.$executeRaw`
      UPDATE event_sinks SET cursor = GREATEST(cursor, ${cursor}::bigint), attempts = 0, next_attempt_at = NULL,
             lease_owner = CASE WHEN ${release} THEN NULL ELSE lease_owner END,
             lease_expires_at = CASE WHEN ${release} THEN NULL ELSE lease_expires_at END,
             last_error = CASE WHEN ${delivered} > 0 THEN NULL ELSE last_error END,
             delivered_count = delivered_count + ${delivered},
             last_delivered_at = CASE WHEN ${delivered} > 0 THEN now() ELSE last_delivered_at END
       WHERE id = ${id}::uuid AND lease_owner = ${owner}`;
    return n === 1;
  }

  /** A failed try at the event after `cursor`: counted, and the next one not before `retryInMs`. */
  async failed(id: string, owner: string, cursor: bigint, delivered: number, error: string, retryInMs: number): Promise<void> {
    await this.db.$executeRaw`
      UPDATE event_sinks SET cursor = GREATEST(cursor, ${cursor}::bigint), attempts = attempts + 1,
             next_attempt_at = now() + ${retryInMs}::int * interval '1 millisecond', last_error = ${error},
             failed_count = failed_count + 1, delivered_count = delivered_count + ${delivered},
             last_delivered_at = CASE WHEN ${delivered} > 0 THEN now() ELSE last_delivered_at END
       WHERE id = ${id}::uuid AND lease_owner = ${owner}`;
  }

  /** Gives up on one event: a dead letter made and the cursor moved past it, in one transaction. */
  async deadLetter(
    id: string,
    owner: string,
    event: { id: string; seq: bigint; body: object },
    attempts: number,
    error: string,
  ): Promise<void> {
    await this.uow.run(async () => {
      const moved = await this.db.$executeRaw`
        UPDATE event_sinks SET cursor = GREATEST(cursor, ${event.seq}::bigint), attempts = 0, next_attempt_at = NULL,
               last_error = ${error}, failed_count = failed_count + 1
         WHERE id = ${id}::uuid AND lease_owner = ${owner}`;
      if (moved !== 1) return;
      await this.db.$executeRaw`
        INSERT INTO event_dead_letters (id, sink_id, event_id, event_seq, event, attempts, last_error)
        VALUES (${randomUUID()}::uuid, ${id}::uuid, ${event.id}::uuid, ${event.seq}::bigint, ${JSON.stringify(event.body)}::jsonb,
                ${attempts}, ${error})
        ON CONFLICT (sink_id, event_id) DO UPDATE SET state = 'dead', attempts = EXCLUDED.attempts,
               last_error = EXCLUDED.last_error, updated_at = now()`;
    });
  }

  /** The smallest cursor of the enabled sinks (what every one of them has), or null when there is none. */
  async minCursor(): Promise<bigint | null> {
    const rows = await this.db.$queryRaw<{ c: bigint | null }[]>`SELECT min(cursor) AS c FROM event_sinks WHERE enabled`;
    return rows[0]?.c ?? null;
  }

  /**
   * Each enabled sink with the time of the oldest numbered event it has not been sent (null: none waits), for the lag
   * metric. (With skipIdle, the reads of outbox_events outside OutboxRepository: a look-up per sink, in the index's order.)
   */
  async lags(): Promise<Array<Pick<SinkRow, 'id' | 'name' | 'databaseId' | 'databaseName'> & { oldest: Date | null }>> {
    return this.db.$queryRaw`
      SELECT s.id, s.name, s.database_id AS "databaseId", d.name AS "databaseName",
             CASE WHEN s.database_id IS NULL
                  THEN (SELECT o.created_at FROM outbox_events o WHERE o.seq > s.cursor ORDER BY o.seq LIMIT 1)
                  ELSE (SELECT o.created_at FROM outbox_events o
                         WHERE o.database_id = s.database_id AND o.seq > s.cursor ORDER BY o.seq LIMIT 1) END AS oldest
        FROM event_sinks s LEFT JOIN databases d ON d.id = s.database_id
       WHERE s.enabled`;
  }

  async deadLetters(sinkId: string, limit: number, afterSeq?: bigint): Promise<DeadLetterRow[]> {
    return this.db.$queryRawUnsafe<DeadLetterRow[]>(
      `SELECT ${DEAD_COLUMNS} FROM event_dead_letters WHERE sink_id = $1::uuid AND event_seq > $2::bigint ORDER BY event_seq LIMIT $3`,
      sinkId,
      afterSeq ?? -1n,
      limit,
    );
  }

  /** Dead letters asked to be sent again, oldest first. */
  async replays(sinkId: string, limit: number): Promise<DeadLetterRow[]> {
    return this.db.$queryRawUnsafe<DeadLetterRow[]>(
      `SELECT ${DEAD_COLUMNS} FROM event_dead_letters WHERE sink_id = $1::uuid AND state = 'replay' ORDER BY event_seq LIMIT $2`,
      sinkId,
      limit,
    );
  }

  /** Marks dead letters (some, or all: null) for replay; returns how many. */
  async markReplay(sinkId: string, ids: string[] | null): Promise<number> {
    return this.db.$executeRaw`
      UPDATE event_dead_letters SET state = 'replay', updated_at = now()
       WHERE sink_id = ${sinkId}::uuid AND state = 'dead' AND (${ids}::uuid[] IS NULL OR id = ANY(${ids}::uuid[]))`;
  }

  /** Deletes dead letters (some, or all: null); returns how many. */
  async discard(sinkId: string, ids: string[] | null): Promise<number> {
    return this.db.$executeRaw`
      DELETE FROM event_dead_letters WHERE sink_id = ${sinkId}::uuid AND (${ids}::uuid[] IS NULL OR id = ANY(${ids}::uuid[]))`;
  }

  /** A replayed dead letter that was delivered. */
  async replayed(id: string): Promise<void> {
    await this.db.$executeRaw`DELETE FROM event_dead_letters WHERE id = ${id}::uuid`;
  }

  /** A replay that failed again: back to dead. */
  async replayFailed(id: string, error: string): Promise<void> {
    await this.db.$executeRaw`
      UPDATE event_dead_letters SET state = 'dead', attempts = attempts + 1, last_error = ${error}, updated_at = now()
       WHERE id = ${id}::uuid`;
  }
}
