import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../../../platform/config/config';
import { Errors } from '../../../platform/http/errors';
import type { DescribeTransactionResponse } from './transactions.schemas';
import { isUuid } from '../../../platform/http/validation/fields';
import { ReplicaIdentity } from '../../../platform/cluster/replica-identity';
import { TableStorage } from '../../../engine/storage/table-storage.service';
import { TransactionRow, TransactionsRepository } from './transactions.repository';

/** What finishing a clean-up did: the locations deleted and, when measured, their bytes. */
export interface CleanUpOutcome {
  removed: string[];
  bytes: number;
  succeeded: boolean;
}

/**
 * Long-running catalog operations. A cascade drop commits its catalog change at once (atomically) and records the
 * storage folders left to delete as a transaction row owned by this replica; the deletion then runs here, renewing
 * the row's updated_at as its heartbeat. The caller waits up to CASCADE_SYNC_BUDGET_MS; beyond that it gets the
 * transaction id to poll with DescribeTransaction. Because the work left is in the row, any replica can report on
 * it, and when its owner falls silent for RECLAIM_AFTER_SECONDS the reclaimer (src/modules/reclaim) takes it over
 * through `claimStale` and finishes it with `resume`.
 */
@Injectable()
export class TransactionsService implements OnApplicationShutdown {
  private readonly log = new Logger('Transactions');
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repo: TransactionsRepository,
    private readonly storage: TableStorage,
    private readonly replica: ReplicaIdentity,
  ) {}

  /** Records a storage clean-up in the caller's unit of work (committed with its catalog change); returns its id. */
  async record(databaseId: string, operation: string, locations: string[]): Promise<string> {
    const id = randomUUID();
    await this.repo.insert({ id, databaseId, operation, pending: locations, owner: this.replica.id });
    return id;
  }

  /** Runs a recorded clean-up; resolves true when it finished within the synchronous budget. */
  async runWithinBudget(id: string, locations: string[]): Promise<boolean> {
    const work = this.track(this.cleanUp(id, locations));
    if (this.config.cascadeSyncBudgetMs <= 0) return false; // a zero budget never waits (not a race with a 1ms timer)
    const budget = new Promise<false>((r) => setTimeout(() => r(false), this.config.cascadeSyncBudgetMs).unref());
    return Promise.race([work.then(() => true), budget]);
  }

  /**
   * AlterTransaction: a recorded clean-up follows a catalog change that is already committed, so there is nothing
   * to abort or annotate. 404 (code 10) for a transaction the database does not have, else 406 (code 0).
   */
  async alter(databaseId: string, id: string): Promise<never> {
    const row = isUuid(id) ? await this.repo.find(databaseId, id) : null;
    if (!row) throw Errors.transactionNotFound(`transaction '${id}'`);
    throw Errors.unsupported(
      `transaction '${id}' cannot be altered: it is the storage clean-up of a ${row.operation} whose catalog change is ` +
        'already committed, so it can be neither aborted nor given properties (DescribeTransaction reports its progress)',
    );
  }

  async describe(databaseId: string, id: string): Promise<DescribeTransactionResponse> {
    const row = isUuid(id) ? await this.repo.find(databaseId, id) : null;
    if (!row) throw Errors.transactionNotFound(`transaction '${id}'`);
    return {
      status: row.status,
      properties: {
        operation: row.operation,
        created_at: row.createdAt.toISOString(),
        updated_at: row.updatedAt.toISOString(),
        pending: String(row.pending.length),
        ...(row.error ? { error: row.error } : {}),
      },
    };
  }

  /** Running clean-ups whose owner has been silent for `ageMs`, now owned by this replica. */
  claimStale(ageMs: number, limit: number): Promise<TransactionRow[]> {
    return this.repo.claimStale(this.replica.id, ageMs, limit);
  }

  /** Finishes a clean-up taken over with `claimStale`, measuring each folder before it goes. */
  resume(row: TransactionRow, measure: (location: string) => Promise<number>): Promise<CleanUpOutcome> {
    return this.track(this.cleanUp(row.id, row.pending, measure));
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
  }

  private async cleanUp(id: string, locations: string[], measure?: (location: string) => Promise<number>): Promise<CleanUpOutcome> {
    const owner = this.replica.id;
    const left = [...locations];
    const out: CleanUpOutcome = { removed: [], bytes: 0, succeeded: false };
    let held = true;
    const heartbeat = setInterval(() => {
      this.repo.updateOwned(id, owner).then(
        (still) => (held = held && still),
        () => undefined, // the catalog is unreachable: keep deleting; the next beat tries again
      );
    }, this.config.reclaim.heartbeatMs);
    heartbeat.unref();
    try {
      while (left.length > 0 && held) {
        if (measure) out.bytes += await measure(left[0]);
        await this.storage.remove(left[0]);
        out.removed.push(left.shift() as string);
        if (left.length % 50 === 0) held = await this.repo.updateOwned(id, owner, { pending: left });
      }
      if (!held) {
        this.log.warn(`transaction ${id} was taken over by another replica; leaving the rest to it`);
        return out;
      }
      await this.repo.updateOwned(id, owner, { status: 'Succeeded', pending: [] });
      out.succeeded = true;
    } catch (err) {
      const message = (err as Error).message;
      this.log.warn(`transaction ${id} failed: ${message}`);
      await this.repo.updateOwned(id, owner, { status: 'Failed', pending: left, error: message }).catch(() => undefined);
    } finally {
      clearInterval(heartbeat);
    }
    return out;
  }

  private track<T>(p: Promise<T>): Promise<T> {
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p)).catch(() => undefined);
    return p;
  }
}
