import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Prisma } from '../../generated/prisma/client';
import { CatalogClient, UnitOfWork } from '../../platform/db/unit-of-work';
import type { OutboxEventInput } from './event-catalogue';

/** The event types whose `data.version` is a version the change made (not one it names, as a tag's). */
const VERSION_MAKING = [
  'lance.table.created',
  'lance.table.written',
  'lance.table.schema_changed',
  'lance.table.restored',
  'lance.table.index_created',
  'lance.table.index_dropped',
  'lance.table.maintained',
];

/** A sequenced outbox event, as the dispatcher reads it. */
export interface OutboxEventRow {
  id: string;
  seq: bigint;
  databaseId: string | null;
  databaseName: string;
  type: string;
  subject: string;
  objectId: string[];
  data: Record<string, unknown>;
  createdAt: Date;
}

/**
 * The INSERT of one outbox event, as a statement of its own or the tail of another's CTE (AuditRepository.confirm);
 * `when`: only if that condition holds (a CTE's outcome).
 */
export function outboxInsertSql(e: OutboxEventInput, when?: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`INSERT INTO outbox_events (id, database_id, database_name, type, subject, object_id, data)
    SELECT ${randomUUID()}::uuid, ${e.databaseId}::uuid, ${e.databaseName}, ${e.type}, ${e.subject},
           ${e.objectId}::text[], ${JSON.stringify(e.data)}::jsonb
    ${when ? Prisma.sql`WHERE ${when}` : Prisma.empty}`;
}

/**
 * outbox_events and outbox_state: the only place that reads or writes them (migration 20261129000000_event_outbox).
 * Events are inserted in the unit of work of their change; the sequencer numbers committed ones; the dispatcher reads
 * numbered ones after a sink's cursor; the trim deletes delivered ones after their retention.
 */
@Injectable()
export class OutboxRepository {
  constructor(private readonly uow: UnitOfWork) {}

  private get db(): CatalogClient {
    return this.uow.db;
  }

  /** Inserts one event (inside the unit of work open on this call path: it commits or rolls back with the change). */
  async insert(e: OutboxEventInput): Promise<void> {
    await this.db.$executeRaw(outboxInsertSql(e));
  }

  /**
   * Numbers up to `limit` committed, unnumbered events in the order they were written (outbox_state's row lock lets
   * one sequencer run at a time: a cursor never passes a number given later to an event written earlier). Returns
   * the last number given (the head).
   *
   * Per table, the events that made versions are numbered in version order: two writers of one table commit in
   * version order but may write their events the other way round (each after its own commit). Within a batch, such
   * events keep the places their table's versioned events had, re-dealt by version (and branch); others keep theirs.
   */
  async sequence(limit: number): Promise<bigint> {
    return this.uow.run(async () => {
      const [state] = await this.db.$queryRaw<{ last: bigint }[]>`SELECT last_seq AS last FROM outbox_state WHERE id = 1 FOR UPDATE`;
      const rows = await this.db.$queryRaw<{ head: bigint | null }[]>`
        WITH batch AS (
          SELECT id, subject, COALESCE(data->>'branch', '') AS branch, created_at,
                 CASE WHEN type IN (${Prisma.join(VERSION_MAKING)}) AND jsonb_typeof(data->'version') = 'number'
                      THEN (data->>'version')::numeric END AS v
            FROM outbox_events WHERE seq IS NULL ORDER BY created_at, id LIMIT ${limit}
        ), slots AS (
          SELECT id, subject, branch, v, row_number() OVER (ORDER BY created_at, id) AS slot FROM batch
        ), versioned_slots AS (
          SELECT subject, branch, slot, row_number() OVER (PARTITION BY subject, branch ORDER BY slot) AS k FROM slots WHERE v IS NOT NULL
        ), versioned_order AS (
          SELECT id, subject, branch, row_number() OVER (PARTITION BY subject, branch ORDER BY v, slot) AS k FROM slots WHERE v IS NOT NULL
        ), placed AS (
          SELECT o.id, s.slot FROM versioned_order o JOIN versioned_slots s USING (subject, branch, k)
          UNION ALL
          SELECT id, slot FROM slots WHERE v IS NULL
        ), numbered AS (
          UPDATE outbox_events o SET seq = ${state.last}::bigint + placed.slot FROM placed WHERE o.id = placed.id RETURNING o.seq
        )
        SELECT max(seq) AS head FROM numbered`;
      const head = rows[0]?.head;
      if (head === null || head === undefined) return state.last;
      await this.db.$executeRaw`UPDATE outbox_state SET last_seq = ${head}::bigint WHERE id = 1`;
      return head;
    });
  }

  /** The last number given (where a new sink starts: it sees what is committed after it was made). */
  async head(): Promise<bigint> {
    const [state] = await this.db.$queryRaw<{ last: bigint }[]>`SELECT last_seq AS last FROM outbox_state WHERE id = 1`;
    return state.last;
  }

  /**
   * Numbered events in (after, upTo], in order, of one database (or every one: null), at most `limit`. The dispatcher's
   * hot read: straight on the driver and prepared (UnitOfWork.read), not through Prisma's row mapping. (The number
   * comes back as text, for BigInt; the order is the column's, not the text's: `ORDER BY outbox_events.seq`.)
   */
  async after(after: bigint, upTo: bigint, databaseId: string | null, limit: number): Promise<OutboxEventRow[]> {
    const columns = `id, seq::text AS seq, database_id AS "databaseId", database_name AS "databaseName", type, subject,
              object_id AS "objectId", data, created_at AS "createdAt"`;
    // Two statements rather than `($3 IS NULL OR database_id = $3)`, whose generic plan could not use the
    // (database_id, seq) index for a database's sink.
    const rows =
      databaseId === null
        ? await this.uow.read<Omit<OutboxEventRow, 'seq'> & { seq: string }>(
            `SELECT ${columns} FROM outbox_events
              WHERE seq > $1::bigint AND seq <= $2::bigint ORDER BY outbox_events.seq LIMIT $3`,
            [after.toString(), upTo.toString(), limit],
            'lgw_outbox_after',
          )
        : await this.uow.read<Omit<OutboxEventRow, 'seq'> & { seq: string }>(
            `SELECT ${columns} FROM outbox_events
              WHERE database_id = $3::uuid AND seq > $1::bigint AND seq <= $2::bigint ORDER BY outbox_events.seq LIMIT $4`,
            [after.toString(), upTo.toString(), databaseId, limit],
            'lgw_outbox_after_db',
          );
    return rows.map((r) => ({ ...r, seq: BigInt(r.seq) }));
  }

  /** Events not yet delivered to every sink (after the smallest cursor, or not numbered yet). */
  async depth(minCursor: bigint | null): Promise<number> {
    const rows = await this.db.$queryRaw<{ n: bigint }[]>`
      SELECT count(*) AS n FROM outbox_events WHERE seq IS NULL OR (${minCursor}::bigint IS NOT NULL AND seq > ${minCursor}::bigint)`;
    return Number(rows[0]?.n ?? 0);
  }

  /**
   * Deletes numbered events up to `upTo` (every enabled sink has them: delivered or dead-lettered) written more than
   * `retentionMs` ago. Returns how many went.
   */
  async trim(upTo: bigint, retentionMs: number): Promise<number> {
    return this.db.$executeRaw`
      DELETE FROM outbox_events
       WHERE seq IS NOT NULL AND seq <= ${upTo}::bigint AND created_at < now() - ${retentionMs}::int * interval '1 millisecond'`;
  }
}
