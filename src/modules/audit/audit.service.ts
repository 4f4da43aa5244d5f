import { Inject, Injectable, Logger } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../../platform/config/config';
import { paginate } from '../../platform/http/pagination';
import type { AuditTrailResponse } from './audit.schemas';
import { isUuid, PageRequest } from '../../platform/http/validation/fields';
import { UnitOfWork } from '../../platform/db/unit-of-work';
import { DatabasesRepository } from '../identity';
import { AuditContext, AuditEntry, PendingAudit } from './audit-context';
import { AuditEventRow, AuditFilter, AuditRepository } from './audit.repository';
import { sanitizeText, sanitizeValue } from './audit-sanitize';
import { eventOf } from '../outbox';

export type { AuditEntry } from './audit-context';

/** An audit record written before an engine commit: confirmed after it, withdrawn if the commit failed. */
export interface AuditHandle {
  committed(details?: Record<string, unknown>): Promise<void>;
  failed(): Promise<void>;
}

const NO_AUDIT: AuditHandle = { committed: async () => undefined, failed: async () => undefined };

/** An audit page token: [ISO timestamp, event uuid] of the last event of the previous page. */
const isAuditKey = (v: unknown): v is [string, string] =>
  Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && !Number.isNaN(Date.parse(v[0])) && isUuid(v[1]);

/**
 * The audit trail. A record is never written after the fact and then lost: a catalog change records itself in its
 * own transaction (the change and its record commit together or not at all), and a data change (in Lance, where
 * Postgres has no say) records itself before the engine commits, so a failure to record fails the request before
 * anything changed. The record owed by the current request comes from AuditContext (AuditInterceptor fills it in).
 */
@Injectable()
export class AuditService {
  private readonly log = new Logger('Audit');

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repo: AuditRepository,
    private readonly databases: DatabasesRepository,
    private readonly uow: UnitOfWork,
  ) {}

  /**
   * Writes the current request's record in the unit of work that makes the change it describes (call it inside
   * `UnitOfWork.run`); a failure aborts that unit. Without an audited request in progress it does nothing.
   */
  async recordWithChange(extra: { details?: Record<string, unknown>; databaseId?: string } = {}): Promise<void> {
    const p = AuditContext.pending();
    if (!p) return;
    if (!this.uow.inProgress) throw new Error(`audit record of ${p.entry.action} written outside the unit of work of its change`);
    const row = this.row(p.entry, extra.details, extra.databaseId);
    // The change's event (docs/events.md), in the same statement, in the change's transaction: it exists if and only if
    // the change does.
    const event = eventOf(row);
    if (event) await this.repo.insertWithEvent(row, event);
    else await this.repo.insert(row);
    p.state = 'written';
  }

  /**
   * Writes the current request's record before an engine commit, marked `outcome: pending`; throws (failing the
   * request before anything changed) if it cannot. The handle confirms it after the commit or withdraws it when the
   * commit failed; neither ever throws, as nothing after a commit may fail the request.
   */
  async beforeCommit(): Promise<AuditHandle> {
    const p = AuditContext.pending();
    if (!p) return NO_AUDIT;
    // Written on its own, committed before the engine commits: inside a unit it would wait for that unit instead.
    if (this.uow.inProgress) throw new Error(`audit record of ${p.entry.action} written before a commit, but inside a unit of work`);
    const row = this.row(p.entry, { outcome: 'pending' });
    const id = await this.repo.insert(row);
    p.state = 'written';
    return {
      committed: async (details) => {
        try {
          const confirmed = { ...row.details, ...(sanitizeValue(details ?? {}) as object), outcome: 'committed' };
          // The confirmation and the change's event in one statement (docs/events.md).
          await this.repo.confirm(id, confirmed, eventOf({ ...row, details: confirmed }));
        } catch (err) {
          // The record exists (outcome: pending): the reclaimer completes it, and writes its event (CommitCompletion).
          this.log.warn(`could not confirm audit record ${id} (${p.entry.action} of ${p.entry.target}): ${(err as Error).message}`);
        }
      },
      failed: async () => {
        await this.repo
          .delete(id)
          .catch((err) => this.log.warn(`could not withdraw audit record ${id} of a failed ${p.entry.action}: ${(err as Error).message}`));
      },
    };
  }

  /**
   * Records work done outside any request (the reclaimer, the storage scan), on its own and after the fact: storage
   * removal cannot share a transaction with Postgres. A failure is thrown to the caller, not swallowed.
   */
  async record(e: AuditEntry): Promise<void> {
    const databaseId = e.databaseId ?? (await this.databases.findByName(e.databaseName))?.id ?? null;
    const row = this.row(e, {}, databaseId ?? undefined);
    const event = eventOf(row);
    if (event) await this.repo.insertWithEvent(row, event);
    else await this.repo.insert(row);
  }

  /** The current request succeeded without changing anything: it owes no record. */
  nothingChanged(): void {
    const p = AuditContext.pending();
    if (p) p.state = 'nothing-changed';
  }

  /**
   * Writes a record on its own, after the change (the route's service recorded nothing itself). Throws when it
   * cannot: an unrecorded change is reported as a failed request rather than forgotten.
   */
  async recordAfter(p: PendingAudit): Promise<void> {
    await this.record(p.entry);
    p.state = 'written';
  }

  private row(e: AuditEntry, details: Record<string, unknown> = {}, databaseId?: string) {
    return {
      databaseId: databaseId ?? e.databaseId ?? null,
      databaseName: sanitizeText(e.databaseName),
      actor: sanitizeText(e.actor),
      action: e.action,
      target: sanitizeText(e.target),
      details: sanitizeValue({ ...(e.details ?? {}), ...details }) as Record<string, unknown>,
      requestId: e.requestId === undefined ? undefined : sanitizeText(e.requestId),
    };
  }

  /**
   * Engine commits whose writer died between the commit and its confirmation (docs/events.md, "After a crash"): the
   * reclaimer's CommitCompletion finds them here and settles each one, as committed at a version or as not committed.
   */
  pendingCommits(olderThanMs: number, limit: number) {
    return this.repo.pendingCommits(olderThanMs, limit);
  }

  /** Which of `among` the trail already accounts for on `target` since `since`. */
  versionsRecorded(databaseId: string | null, target: string, since: Date, among: number[]): Promise<number[]> {
    return this.repo.versionsRecorded(databaseId, target, since, among);
  }

  /**
   * Settles a pending commit record found after a crash: committed at `version` (its change event written with it,
   * marked `recovered`, without counts the writer never reported), not committed, or unknown (its table is gone). False when it was settled meanwhile.
   */
  async settleCommit(
    rec: {
      id: string;
      databaseId: string | null;
      databaseName: string;
      actor: string;
      action: string;
      target: string;
      details: Record<string, unknown>;
      requestId: string | null;
    },
    version: number | 'not_committed' | 'unknown',
  ): Promise<boolean> {
    if (typeof version !== 'number') return this.repo.settlePending(rec.id, { ...rec.details, outcome: version }, null);
    const details = { ...rec.details, version, outcome: 'committed', recovered: true };
    return this.repo.settlePending(rec.id, details, eventOf({ ...rec, requestId: rec.requestId ?? undefined, details }));
  }

  /** A page of the trail, narrowed by `filter` (a page token is only meaningful with the filter it was given with). */
  async list(databaseId: string, page: PageRequest, filter: AuditFilter = {}): Promise<AuditTrailResponse> {
    const { rows, ...next } = await paginate(page, this.config, {
      isKey: isAuditKey,
      fetch: (before, take) => this.repo.list(databaseId, filter, before, take),
      keyOf: (r: AuditEventRow): [string, string] => [r.createdAt.toISOString(), r.id],
    });
    return {
      events: rows.map((r) => ({
        id: r.id,
        actor: r.actor,
        action: r.action,
        target: r.target,
        details: r.details,
        request_id: r.requestId,
        created_at: r.createdAt.toISOString(),
      })),
      ...next,
    };
  }
}
