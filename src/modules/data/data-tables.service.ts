import { Injectable } from '@nestjs/common';
import { Errors } from '../../platform/http/errors';
import { branchOf } from '../../engine/lance/lance-engine';
import { AuditService } from '../audit';
import { TableRow, TablesService } from '../catalog';
import { TenantContext } from '../identity';
import { display } from './dataplane.types';

/**
 * What every data operation shares: the table a request names (one that has data, where an operation needs some) and
 * the audited engine commit.
 */
@Injectable()
export class DataTables {
  constructor(
    private readonly tables: TablesService,
    private readonly audit: AuditService,
  ) {}

  /**
   * One engine commit of an audited write, with its audit record written first (the change is in Lance, where no
   * Postgres transaction can hold both): if the record cannot be written nothing is committed and the request
   * fails; if the commit fails the record is withdrawn; after the commit it is confirmed with `details`.
   */
  async commit<T>(fn: () => Promise<T>, details: (r: T) => Record<string, unknown>): Promise<T> {
    const audit = await this.audit.beforeCommit();
    let r: T;
    try {
      r = await fn();
    } catch (err) {
      await audit.failed();
      throw err;
    }
    await audit.committed(details(r));
    return r;
  }

  /**
   * A table without data has no branches: a write or read naming one is a 404 (code 22), never main's (first) data.
   * The `branch` of every data operation is honoured by the engine otherwise (docs/rest-contract.md §2.2: absent means main).
   */
  assertNoBranch(id: string[], branch: string | undefined): void {
    const b = branchOf(branch);
    if (b) throw Errors.branchNotFound(`branch '${b}' not found: table '${display(id)}' has no data yet`);
  }

  /** The table, which must have data (a declared-only table cannot be read or changed in place). */
  async written(t: TenantContext, id: string[]): Promise<TableRow> {
    const row = await this.tables.get(t, id);
    if (!(await this.tables.hasData(row))) throw Errors.invalidInput(`table '${display(id)}' has no data yet (declared only)`);
    return row;
  }
}
