import { Inject, Injectable } from '@nestjs/common';
import type { Prisma, PrismaClient } from '../../generated/prisma/client';
import { ScopedStorage } from '../context/scoped-storage';
import { CATALOG_DB, CatalogDb } from './catalog-db';

/** What a repository queries with: the open unit of work's transaction, or the pool when none is open. */
export type CatalogClient = PrismaClient | Prisma.TransactionClient;

/** How long a unit of work may wait for a connection, and run, before Postgres gives up on it. */
export const UNIT_OF_WORK_OPTIONS = { timeout: 30_000, maxWait: 10_000 } as const;

/**
 * The unit of work: services decide where a catalog change begins and ends (`run`), repositories query through
 * `db` and so join whatever unit is open on this call path (kept in async context) without a transaction handle
 * being passed around. Nested `run`s join the outer one. Outside a unit, `db` is the pool.
 *
 * Joining matters for more than atomicity: the embedded catalog has one connection, so a query issued beside an
 * open transaction instead of inside it would wait on that transaction forever.
 *
 * Hand-written rather than nestjs-cls's transactional plugin (which this replaced): the plugin's async context
 * stays switched on for good once a unit has run, and on Node 20 and 22 that costs every catalog read the async
 * hooks (docs/adr/0010-async-context.md); switching it off would mean reading its private field.
 */
@Injectable()
export class UnitOfWork {
  /** The open unit's transaction; emptied when the unit ends, so that work it left running no longer uses it. */
  private readonly unit = new ScopedStorage<{ tx?: Prisma.TransactionClient }>();

  constructor(@Inject(CATALOG_DB) private readonly catalog: CatalogDb) {}

  get db(): CatalogClient {
    return this.unit.getStore()?.tx ?? this.catalog.prisma;
  }

  /**
   * A read-only statement with positional parameters ($1, $2, …): inside a unit of work on its transaction (through
   * Prisma), outside one straight on the driver, which is where hot reads spend least (see CatalogDb.read).
   */
  read<T>(sql: string, params: readonly unknown[], statement?: string): Promise<T[]> {
    const tx = this.unit.getStore()?.tx;
    if (tx) return tx.$queryRawUnsafe<T[]>(sql, ...params);
    return this.catalog.read<T>(sql, params, statement);
  }

  /**
   * Runs `fn` in a unit: one transaction for every repository call on its path, committed when `fn` resolves and
   * rolled back when it throws.
   */
  run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.inProgress) return fn();
    return this.catalog.prisma.$transaction((tx) => {
      const unit: { tx?: Prisma.TransactionClient } = { tx };
      return this.unit.run(unit, fn).finally(() => (unit.tx = undefined));
    }, UNIT_OF_WORK_OPTIONS);
  }

  get inProgress(): boolean {
    return this.unit.getStore()?.tx !== undefined;
  }
}
