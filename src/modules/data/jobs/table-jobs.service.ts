import { Injectable, OnModuleInit } from '@nestjs/common';
import * as lancedb from '@lancedb/lancedb';
import { Errors } from '../../../platform/http/errors';
import { branchOf, LanceEngine } from '../../../engine/lance/lance-engine';
import { ClaimedJob, JobRunContext, JobsService } from '../../jobs';
import type { JobIdResponse } from '../../jobs';
import { TenantContext } from '../../identity';
import { DataTables } from '../data-tables.service';
import { display } from '../dataplane.types';

export const BACKFILL_JOB = 'backfill_column';

/** The field metadata the engine puts on a computed column (`add_columns` with `computed`). */
export const isComputed = (f: { metadata?: Map<string, string> | null }) => f.metadata?.get('computed_column') === 'true';

/**
 * The data plane's jobs: `backfill_column` fills a computed column's rows that hold no value yet (and recomputes
 * those whose inputs changed), as the engine's refresh does, in a job kept in the catalog (JobsService) that any
 * replica may run. What the request can check is checked before the job is made (the table, the column, that it is
 * computed), so the client's `refreshColumnAsync` rejects bad input at once rather than through a failed job.
 */
@Injectable()
export class TableJobsService implements OnModuleInit {
  constructor(
    private readonly jobs: JobsService,
    private readonly engine: LanceEngine,
    private readonly data: DataTables,
  ) {}

  onModuleInit(): void {
    this.jobs.register(BACKFILL_JOB, (job, ctx) => this.runBackfill(job, ctx));
  }

  async backfill(t: TenantContext, id: string[], column: string, branch?: string, where?: string): Promise<JobIdResponse> {
    if (where !== undefined && where.trim() !== '') {
      throw Errors.unsupported('backfill_column with `where` is not supported: the whole column is filled');
    }
    const row = await this.data.written(t, id);
    await this.engine.read(
      row.location,
      async (table) => {
        const field = (await table.schema()).fields.find((f) => f.name === column);
        if (!field) throw Errors.columnNotFound(`column '${column}' not found in table '${display(id)}'`);
        if (!isComputed(field)) {
          throw Errors.invalidInput(`column '${column}' is not a computed column (add it with add_columns and \`computed\`)`);
        }
      },
      { branch },
    );
    const b = branchOf(branch);
    const jobId = await this.jobs.submit(t, id, BACKFILL_JOB, {
      table: id[id.length - 1],
      table_id: id,
      column,
      ...(b ? { branch: b } : {}),
    });
    return { job_id: jobId };
  }

  /** Runs a backfill job: the engine's refresh of the column, committed only if no cancel came first. */
  private async runBackfill(job: ClaimedJob, ctx: JobRunContext): Promise<Record<string, unknown>> {
    const column = String(job.spec.column);
    const branch = typeof job.spec.branch === 'string' ? job.spec.branch : undefined;
    const row = await this.data.written(ctx.tenant, job.tableId);
    return this.engine.withTable(
      row.location,
      async (table: lancedb.Table) => {
        const sourceVersion = await table.version();
        await ctx.beforeCommit();
        const r = await this.data.commit(
          () =>
            table.refreshColumn(column).catch((err: unknown) => {
              // The engine's refresh reads deleted rows as nulls, which a non-nullable input column refuses.
              if (/declared as non-nullable but contains null values/.test(String((err as Error)?.message))) {
                throw Errors.invalidTableState(
                  `the engine cannot fill '${column}' while the table has deleted rows and an input column is non-nullable; ` +
                    'compact the table (optimize) and submit the backfill again',
                );
              }
              throw err;
            }),
          (x) => ({ column, rows_filled: x.rowsFilled, version: x.version }),
        );
        // Both spellings: the remote client's RefreshColumnResult, and the local one's.
        return {
          rows_assigned: r.rowsFilled,
          rows_failed: 0,
          rows_remaining: 0,
          source_version: sourceVersion,
          published_version: r.version,
          rows_filled: r.rowsFilled,
          version: r.version,
        };
      },
      { branch },
    );
  }
}
