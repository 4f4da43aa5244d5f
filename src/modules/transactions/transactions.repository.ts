import { Injectable } from '@nestjs/common';
import { CatalogClient, UnitOfWork } from '../../database/unit-of-work';

export type TransactionStatus = 'Queued' | 'Running' | 'Succeeded' | 'Failed' | 'Canceled';

export interface TransactionRow {
  id: string;
  databaseId: string;
  operation: string;
  status: TransactionStatus;
  pending: string[];
  error: string | null;
  createdAt: Date;
  updatedAt: Date;
}

@Injectable()
export class TransactionsRepository {
  constructor(private readonly uow: UnitOfWork) {}

  private get db(): CatalogClient {
    return this.uow.db;
  }

  async insert(t: { id: string; databaseId: string; operation: string; pending: string[] }): Promise<void> {
    await this.db.catalogTransaction.create({
      data: { id: t.id, databaseId: t.databaseId, operation: t.operation, status: 'Running', pending: t.pending },
    });
  }

  async find(databaseId: string, id: string): Promise<TransactionRow | null> {
    return (await this.db.catalogTransaction.findFirst({ where: { id, databaseId } })) as TransactionRow | null;
  }

  async update(id: string, data: { status?: TransactionStatus; pending?: string[]; error?: string | null }): Promise<void> {
    await this.db.catalogTransaction.update({ where: { id }, data: { ...data, updatedAt: new Date() } });
  }

  /** Running transactions not touched for `staleMs` (their process may have died): candidates to resume. */
  async listStale(staleMs: number): Promise<TransactionRow[]> {
    return (await this.db.catalogTransaction.findMany({
      where: { status: 'Running', updatedAt: { lt: new Date(Date.now() - staleMs) } },
      take: 100,
    })) as TransactionRow[];
  }
}
