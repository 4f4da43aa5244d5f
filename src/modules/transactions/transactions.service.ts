import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../../config/config';
import { Errors } from '../../common/errors';
import { TableStorage } from '../../storage/table-storage.service';
import { TransactionRow, TransactionsRepository } from './transactions.repository';

/** A Running transaction untouched this long is presumed orphaned by a dead process and resumed. */
const STALE_MS = 60_000;

/**
 * Long-running catalog operations. A cascade drop commits its catalog change at once (atomically) and records the
 * storage folders left to delete as a transaction row; the deletion then runs here. The caller waits up to
 * CASCADE_SYNC_BUDGET_MS; beyond that it gets the transaction id to poll with DescribeTransaction. Because the
 * work left is in the row, any replica can report on it and a restarted process resumes it.
 */
@Injectable()
export class TransactionsService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly log = new Logger('Transactions');
  private readonly inFlight = new Set<Promise<unknown>>();
  private sweeper?: NodeJS.Timeout;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repo: TransactionsRepository,
    private readonly storage: TableStorage,
  ) {}

  /** Records a storage clean-up in the caller's unit of work (committed with its catalog change); returns its id. */
  async record(databaseId: string, operation: string, locations: string[]): Promise<string> {
    const id = randomUUID();
    await this.repo.insert({ id, databaseId, operation, pending: locations });
    return id;
  }

  /** Runs a recorded clean-up; resolves true when it finished within the synchronous budget. */
  async runWithinBudget(id: string, locations: string[]): Promise<boolean> {
    const work = this.track(this.cleanUp(id, locations));
    if (this.config.cascadeSyncBudgetMs <= 0) return false; // a zero budget never waits (not a race with a 1ms timer)
    const budget = new Promise<false>((r) => setTimeout(() => r(false), this.config.cascadeSyncBudgetMs).unref());
    return Promise.race([work.then(() => true), budget]);
  }

  /** Deletes folders that no catalog row references any more (after a plain drop); errors are logged, not thrown. */
  removeQuietly(locations: string[]): Promise<void> {
    return this.track(
      Promise.all(locations.map((l) => this.storage.remove(l))).then(
        () => undefined,
        (err) => this.log.warn(`could not delete table data: ${(err as Error).message}`),
      ),
    );
  }

  async describe(databaseId: string, id: string): Promise<{ status: string; properties: Record<string, string> }> {
    const row = /^[0-9a-f-]{36}$/i.test(id) ? await this.repo.find(databaseId, id) : null;
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

  onApplicationBootstrap(): void {
    this.sweeper = setInterval(() => void this.resumeStale(), STALE_MS).unref();
    void this.resumeStale();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    await Promise.allSettled([...this.inFlight]);
  }

  private async resumeStale(): Promise<void> {
    try {
      const stale: TransactionRow[] = await this.repo.listStale(STALE_MS);
      for (const t of stale) await this.track(this.cleanUp(t.id, t.pending));
    } catch (err) {
      this.log.warn(`could not resume transactions: ${(err as Error).message}`);
    }
  }

  private async cleanUp(id: string, locations: string[]): Promise<void> {
    const left = [...locations];
    try {
      while (left.length > 0) {
        await this.storage.remove(left[0]);
        left.shift();
        if (left.length % 50 === 0) await this.repo.update(id, { pending: left });
      }
      await this.repo.update(id, { status: 'Succeeded', pending: [] });
    } catch (err) {
      const message = (err as Error).message;
      this.log.warn(`transaction ${id} failed: ${message}`);
      await this.repo.update(id, { status: 'Failed', pending: left, error: message }).catch(() => undefined);
    }
  }

  private track<T>(p: Promise<T>): Promise<T> {
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p)).catch(() => undefined);
    return p;
  }
}
