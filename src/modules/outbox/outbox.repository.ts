import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Prisma } from '../../generated/prisma/client';
import { CatalogClient, UnitOfWork } from '../../platform/db/unit-of-work';
import type { OutboxEventInput } from './event-catalogue';

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

/** The INSERT of one outbox event, as a statement of its own or the tail of another's CTE (AuditRepository.confirm). */
export function outboxInsertSql(e: OutboxEventInput): Prisma.Sql {
  return Prisma.sql`INSERT INTO outbox_events (id, database_id, database_name, type, subject, object_id, data)
    VALUES (${randomUUID()}::uuid, ${e.databaseId}::uuid, ${e.databaseName}, ${e.type}, ${e.subject},
            ${e.objectId}::text[], ${JSON.stringify(e.data)}::jsonb)`;
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
   */
  async sequence(limit: number): Promise<bigint> {
    return this.uow.run(async () => {
      const [state] = await this.db.$queryRaw<{ last: bigint }[]>`SELECT last_seq AS last FROM outbox_state WHERE id = 1 FOR UPDATE`;
      const rows = await this.db.$queryRaw<{ head: bigint | null }[]>`
        WITH todo AS (
          SELECT id, row_number() OVER (ORDER BY created_at, id) AS n
            FROM (SELECT id, created_at FROM outbox_events WHERE seq IS NULL ORDER BY created_at, id LIMIT ${limit}) u
        ), numbered AS (
          UPDATE outbox_events o SET seq = ${state.last}::bigint + todo.n FROM todo WHERE o.id = todo.id RETURNING o.seq
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

  /** Numbered events in (after, upTo], in order, of one database (or every one: null), at most `limit`. */
  async after(after: bigint, upTo: bigint, databaseId: string | null, limit: number): Promise<OutboxEventRow[]> {
    return this.db.$queryRaw<OutboxEventRow[]>`
      SELECT id, seq, database_id AS "databaseId", database_name AS "databaseName", type, subject,
             object_id AS "objectId", data, created_at AS "createdAt"
        FROM outbox_events
       WHERE seq > ${after}::bigint AND seq <= ${upTo}::bigint
         AND (${databaseId}::uuid IS NULL OR database_id = ${databaseId}::uuid)
       ORDER BY seq LIMIT ${limit}`;
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
