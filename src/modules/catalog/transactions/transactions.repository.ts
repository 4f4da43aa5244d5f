import { Injectable } from '@nestjs/common';
import { CatalogClient, UnitOfWork } from '../../../platform/db/unit-of-work';

export type TransactionStatus = 'Queued' | 'Running' | 'Succeeded' | 'Failed' | 'Canceled';

export interface TransactionRow {
  id: string;
  databaseId: string;
  operation: string;
  status: TransactionStatus;
  pending: string[];
  error: string | null;
  owner: string | null;
  createdAt: Date;
  updatedAt: Date;
}

@Injectable()
export class TransactionsRepository {
  constructor(private readonly uow: UnitOfWork) {}

  private get db(): CatalogClient {
    return this.uow.db;
  }

  /** `owner`: the replica that will run the clean-up (none: the reclaimer takes it once it is stale). */
  async insert(t: { id: string; databaseId: string; operation: string; pending: string[]; owner?: string }): Promise<void> {
    await this.db.catalogTransaction.create({
      data: { id: t.id, databaseId: t.databaseId, operation: t.operation, status: 'Running', pending: t.pending, owner: t.owner ?? null },
    });
  }

  async find(databaseId: string, id: string): Promise<TransactionRow | null> {
    return (await this.db.catalogTransaction.findFirst({ where: { id, databaseId } })) as TransactionRow | null;
  }

  /** Updates a transaction its owner still holds (updated_at is its heartbeat); false when another replica took it. */
  async updateOwned(
    id: string,
    owner: string,
    data: { status?: TransactionStatus; pending?: string[]; error?: string | null } = {},
  ): Promise<boolean> {
    const r = await this.db.catalogTransaction.updateMany({ where: { id, owner }, data: { ...data, updatedAt: new Date() } });
    return r.count === 1;
  }

  /**
   * Takes over Running transactions whose owner has not renewed them for `ageMs` (its process may have died):
   * FOR UPDATE SKIP LOCKED, so two replicas claiming at once take different rows, and the new owner and heartbeat
   * are set in the same statement, so no other replica takes them until this one falls silent in turn.
   */
  async claimStale(owner: string, ageMs: number, limit: number): Promise<TransactionRow[]> {
    return this.db.$queryRaw<TransactionRow[]>`
      UPDATE catalog_transactions SET owner = ${owner}, updated_at = now()
       WHERE id IN (
         SELECT id FROM catalog_transactions
          WHERE status = 'Running' AND updated_at < now() - ${ageMs}::int * interval '1 millisecond'
          ORDER BY updated_at
          LIMIT ${limit}
          FOR UPDATE SKIP LOCKED)
      RETURNING id, database_id AS "databaseId", operation, status, pending, error, owner,
                created_at AS "createdAt", updated_at AS "updatedAt"`;
  }
}
