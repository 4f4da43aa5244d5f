import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Prisma } from '../../generated/prisma/client';
import { CatalogClient, UnitOfWork } from '../../platform/db/unit-of-work';
import { OutboxEventInput, outboxInsertSql } from '../outbox';

export interface AuditEventRow {
  id: string;
  actor: string;
  action: string;
  target: string;
  details: Record<string, unknown>;
  requestId: string | null;
  createdAt: Date;
}

/** What an audit event is written with (its id and time are the repository's). */
export interface NewAuditEvent {
  databaseId: string | null;
  databaseName: string;
  actor: string;
  action: string;
  target: string;
  details: Record<string, unknown>;
  requestId?: string;
}

/** What the trail is narrowed to (absent = any). */
export interface AuditFilter {
  action?: string;
  actor?: string;
  target?: string;
}

@Injectable()
export class AuditRepository {
  constructor(private readonly uow: UnitOfWork) {}

  private get db(): CatalogClient {
    return this.uow.db;
  }

  /** Inserts one event (inside the unit of work open on this call path, if any); returns its id. */
  async insert(e: NewAuditEvent): Promise<string> {
    const id = randomUUID();
    await this.db.auditEvent.create({ data: { id, ...e, details: e.details as object } });
    return id;
  }

  /**
   * Inserts one record and, in the same statement, the change's outbox event (docs/events.md): atomic without a
   * transaction of its own, and no more round trips than the record alone inside one.
   */
  async insertWithEvent(e: NewAuditEvent, event: OutboxEventInput): Promise<void> {
    await this.db.$executeRaw`
      WITH recorded AS (
        INSERT INTO audit_events (id, database_id, database_name, actor, action, target, details, request_id)
        VALUES (${randomUUID()}::uuid, ${e.databaseId}::uuid, ${e.databaseName}, ${e.actor}, ${e.action}, ${e.target},
                ${JSON.stringify(e.details)}::jsonb, ${e.requestId ?? null})
        RETURNING id)
      ${outboxInsertSql(event)}`;
  }

  /** Inserts several events in one statement (refused requests, flushed in batches). */
  async insertMany(events: NewAuditEvent[]): Promise<void> {
    if (events.length === 0) return;
    await this.db.auditEvent.createMany({ data: events.map((e) => ({ id: randomUUID(), ...e, details: e.details as object })) });
  }

  /**
   * Confirms a record written before an engine commit (its final details) and, in the same statement, inserts the
   * change's outbox event (docs/events.md): one round trip, and never one without the other. Only a record still
   * pending: one the reclaimer completed meanwhile (its writer was that slow) does not get a second event.
   */
  async confirm(id: string, details: Record<string, unknown>, event: OutboxEventInput | null): Promise<void> {
    await this.settlePending(id, details, event);
  }

  /**
   * Records written before an engine commit and never confirmed or withdrawn (their writer died in between), older
   * than `olderThanMs`, oldest first (the partial index audit_events_pending_idx).
   */
  async pendingCommits(
    olderThanMs: number,
    limit: number,
  ): Promise<Array<AuditEventRow & { databaseId: string | null; databaseName: string }>> {
    return this.db.$queryRaw`
      SELECT id, database_id AS "databaseId", database_name AS "databaseName", actor, action, target, details,
             request_id AS "requestId", created_at AS "createdAt"
        FROM audit_events
       WHERE details->>'outcome' = 'pending' AND created_at < now() - ${olderThanMs}::int * interval '1 millisecond'
       ORDER BY created_at LIMIT ${limit}`;
  }

  /**
   * Which of the versions `among` records of one target written since `since` say they made (a pending record says
   * none). The version is compared as text: no cast can fail on a record whose version is not a number.
   */
  async versionsRecorded(databaseId: string | null, target: string, since: Date, among: number[]): Promise<number[]> {
    if (among.length === 0) return [];
    const rows = await this.db.$queryRaw<{ v: number }[]>`
      SELECT (details->>'version')::int AS v FROM audit_events
       WHERE database_id IS NOT DISTINCT FROM ${databaseId}::uuid AND md5(target) = md5(${target}) AND target = ${target}
         AND created_at >= ${since} AND jsonb_typeof(details->'version') = 'number'
         AND details->>'version' = ANY(${among.map(String)}::text[])
         AND COALESCE(details->>'outcome', '') <> 'pending'`;
    return rows.map((r) => Number(r.v));
  }

  /**
   * Settles a pending record (its final details) if it is still pending, with its outbox event in the same statement
   * when it has one; false when it was no longer pending (its writer, or another replica, settled it first).
   */
  async settlePending(id: string, details: Record<string, unknown>, event: OutboxEventInput | null): Promise<boolean> {
    const update = Prisma.sql`UPDATE audit_events SET details = ${JSON.stringify(details)}::jsonb
                               WHERE id = ${id}::uuid AND details->>'outcome' = 'pending'`;
    if (!event) return (await this.db.$executeRaw(update)) === 1;
    const rows = await this.db.$queryRaw<{ n: bigint }[]>`
      WITH settled AS (${update} RETURNING id), ev AS (${outboxInsertSql(event, Prisma.sql`EXISTS (SELECT 1 FROM settled)`)} RETURNING id)
      SELECT (SELECT count(*) FROM settled) AS n`;
    return Number(rows[0]?.n ?? 0) === 1;
  }

  async delete(id: string): Promise<void> {
    await this.db.auditEvent.deleteMany({ where: { id } });
  }

  /**
   * Newest first, keyset-paginated on (created_at, id), narrowed by the filters (AND; an action ending in `.` is a
   * prefix). Each filter has its index in the trail's order (migration 20261128200000_audit_filters): actor and
   * target on their md5 (a target may be longer than a btree entry holds), hence `md5(x) = md5($) AND x = $`.
   */
  async list(databaseId: string, filter: AuditFilter, before: [string, string] | undefined, take: number): Promise<AuditEventRow[]> {
    const where: Prisma.Sql[] = [Prisma.sql`database_id = ${databaseId}::uuid`];
    if (filter.action) {
      where.push(
        filter.action.endsWith('.')
          ? Prisma.sql`action LIKE ${`${filter.action.replace(/[\\%_]/g, (c) => `\\${c}`)}%`}`
          : Prisma.sql`action = ${filter.action}`,
      );
    }
    if (filter.actor !== undefined) where.push(Prisma.sql`md5(actor) = md5(${filter.actor}) AND actor = ${filter.actor}`);
    if (filter.target !== undefined) where.push(Prisma.sql`md5(target) = md5(${filter.target}) AND target = ${filter.target}`);
    if (before) where.push(Prisma.sql`(created_at, id) < (${before[0]}::timestamptz, ${before[1]}::uuid)`);
    return this.db.$queryRaw<AuditEventRow[]>`
      SELECT id, actor, action, target, details, request_id AS "requestId", created_at AS "createdAt"
        FROM audit_events
       WHERE ${Prisma.join(where, ' AND ')}
       ORDER BY created_at DESC, id DESC
       LIMIT ${take}`;
  }
}
