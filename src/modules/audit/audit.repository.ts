import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { CatalogClient, UnitOfWork } from '../../platform/db/unit-of-work';

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

  /** Inserts several events in one statement (refused requests, flushed in batches). */
  async insertMany(events: NewAuditEvent[]): Promise<void> {
    if (events.length === 0) return;
    await this.db.auditEvent.createMany({ data: events.map((e) => ({ id: randomUUID(), ...e, details: e.details as object })) });
  }

  async setDetails(id: string, details: Record<string, unknown>): Promise<void> {
    await this.db.auditEvent.update({ where: { id }, data: { details: details as object } });
  }

  async delete(id: string): Promise<void> {
    await this.db.auditEvent.deleteMany({ where: { id } });
  }

  /**
   * Newest first, keyset-paginated on (created_at, id), narrowed by the filters (AND; an action ending in `.` is a
   * prefix). Each filter has its index on (database_id, column, created_at, id).
   */
  async list(databaseId: string, filter: AuditFilter, before: [string, string] | undefined, take: number): Promise<AuditEventRow[]> {
    const rows = await this.db.auditEvent.findMany({
      where: {
        databaseId,
        ...(filter.action ? { action: filter.action.endsWith('.') ? { startsWith: filter.action } : filter.action } : {}),
        ...(filter.actor !== undefined ? { actor: filter.actor } : {}),
        ...(filter.target !== undefined ? { target: filter.target } : {}),
        ...(before
          ? {
              OR: [{ createdAt: { lt: new Date(before[0]) } }, { createdAt: new Date(before[0]), id: { lt: before[1] } }],
            }
          : {}),
      },
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      take,
      select: { id: true, actor: true, action: true, target: true, details: true, requestId: true, createdAt: true },
    });
    return rows as AuditEventRow[];
  }
}
