import { Inject, Injectable, Logger } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../../platform/config/config';
import { encodePath } from '../../platform/http/ids';
import { LanceEngine } from '../../engine/lance/lance-engine';
import { AuditService } from '../audit';
import { TableRow, TablesRepository } from '../catalog';
import { auditObject } from '../outbox';

/** Engine and catalog clocks differ a little (and file systems round times). */
const CLOCK_SLACK_MS = 2_000;
/** A pending record with no version to account for after this long: its writer died before committing. */
const GIVE_UP_MS = 24 * 3600_000;
const BATCH = 50;

export interface CompletionRound {
  completed: number;
  notCommitted: number;
}

/**
 * Finishes the bookkeeping of engine commits whose writer died between the commit and its confirmation
 * (docs/events.md, "After a crash"), as part of the reclaimer's round. Such a commit left its audit record pending
 * and wrote no change event. For each pending record older than RECLAIM_AFTER_SECONDS on a table, the table's
 * versions are read: a version made after the record was written, at least RECLAIM_AFTER_SECONDS ago (a live writer
 * confirms within moments of its commit), that no other record accounts for, is the dead writer's. The record is then
 * confirmed at that version and its event written in the same statement (marked `recovered`, without the counts the
 * writer never reported). A record with no such version after a day is settled as not committed.
 */
@Injectable()
export class CommitCompletion {
  private readonly log = new Logger('Reclaimer');

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly audit: AuditService,
    private readonly tables: TablesRepository,
    private readonly engine: LanceEngine,
  ) {}

  async run(): Promise<CompletionRound> {
    const out: CompletionRound = { completed: 0, notCommitted: 0 };
    const afterMs = this.config.reclaim.afterMs;
    for (const rec of await this.audit.pendingCommits(afterMs, BATCH)) {
      try {
        const outcome = await this.settle(rec, afterMs);
        if (outcome === 'completed') out.completed++;
        else if (outcome === 'not_committed') out.notCommitted++;
      } catch (err) {
        this.log.warn(`could not complete the pending commit record ${rec.id} (${rec.action}): ${(err as Error).message}`);
      }
    }
    return out;
  }

  private async settle(rec: Awaited<ReturnType<AuditService['pendingCommits']>>[number], afterMs: number) {
    const written = rec.createdAt.getTime();
    const table = rec.action.startsWith('table.') && rec.databaseId ? await this.tableOf(rec.databaseId, rec.target) : null;
    if (!table) {
      await this.audit.settleCommit(rec, 'unknown');
      return 'unknown';
    }
    const settledBy = Date.now() - afterMs;
    const candidates = (await this.engine.versions(table.location)).filter(
      (v) => v.timestamp_millis >= written - CLOCK_SLACK_MS && v.timestamp_millis <= settledBy,
    );
    // A candidate may be another writer's, whose record was written well before it (a long upload records itself
    // before it starts): look for the records of the candidates since this table was made, a day at most.
    const since = Math.max(table.createdAt.getTime(), written - GIVE_UP_MS) - CLOCK_SLACK_MS;
    const recorded = new Set(
      await this.audit.versionsRecorded(
        rec.databaseId,
        rec.target,
        new Date(since),
        candidates.map((v) => v.version),
      ),
    );
    const made = candidates.find((v) => !recorded.has(v.version));
    if (made) {
      if (await this.audit.settleCommit(rec, made.version)) {
        this.log.log(`completed the bookkeeping of ${rec.action} on ${rec.target} (version ${made.version}) after its writer died`);
        return 'completed';
      }
      return 'settled-meanwhile';
    }
    if (Date.now() - written < GIVE_UP_MS) return 'left';
    await this.audit.settleCommit(rec, 'not_committed');
    return 'not_committed';
  }

  /** The table an audit target names (`ns$table`, or `catalog:ns$table`), or null when no such table remains. */
  private async tableOf(databaseId: string, target: string): Promise<TableRow | null> {
    const { catalog, id } = auditObject(target);
    const name = id.pop() ?? '';
    return this.tables.find({ databaseId, catalog }, encodePath(id), name);
  }
}
