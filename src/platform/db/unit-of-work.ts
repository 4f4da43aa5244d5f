import { Inject, Injectable } from '@nestjs/common';
import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterPrisma } from '@nestjs-cls/transactional-adapter-prisma';
import type { Prisma, PrismaClient } from '../../generated/prisma/client';
import { CATALOG_DB, CatalogDb } from './catalog-db';

export type CatalogAdapter = TransactionalAdapterPrisma<PrismaClient>;
/** What a repository queries with: the open unit of work's transaction, or the pool when none is open. */
export type CatalogClient = PrismaClient | Prisma.TransactionClient;

/** How long a unit of work may wait for a connection, and run, before Postgres gives up on it. */
export const UNIT_OF_WORK_OPTIONS = { timeout: 30_000, maxWait: 10_000 } as const;

/**
 * The unit of work: services decide where a catalog change begins and ends (`run`), repositories query through
 * `db` and so join whatever unit is open on this call path (nestjs-cls keeps it in async context) without a
 * transaction handle being passed around. Nested `run`s join the outer one. Outside a unit, `db` is the pool.
 *
 * Joining matters for more than atomicity: the embedded catalog has one connection, so a query issued beside an
 * open transaction instead of inside it would wait on that transaction forever.
 */
@Injectable()
export class UnitOfWork {
  constructor(
    private readonly host: TransactionHost<CatalogAdapter>,
    @Inject(CATALOG_DB) private readonly catalog: CatalogDb,
  ) {}

  get db(): CatalogClient {
    return this.host.tx as CatalogClient;
  }

  /**
   * A read-only statement with positional parameters ($1, $2, …): inside a unit of work on its transaction (through
   * Prisma), outside one straight on the driver, which is where hot reads spend least (see CatalogDb.read).
   */
  read<T>(sql: string, params: readonly unknown[], statement?: string): Promise<T[]> {
    if (this.host.isTransactionActive()) return (this.host.tx as CatalogClient).$queryRawUnsafe<T[]>(sql, ...params);
    return this.catalog.read<T>(sql, params, statement);
  }

  /**
   * Runs `fn` in a unit: one transaction for every repository call on its path, committed when `fn` resolves and
   * rolled back when it throws.
   */
  run<T>(fn: () => Promise<T>): Promise<T> {
    return this.host.withTransaction(fn);
  }

  get inProgress(): boolean {
    return this.host.isTransactionActive();
  }
}
