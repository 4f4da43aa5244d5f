import { Readable } from 'node:stream';
import { Injectable } from '@nestjs/common';
import * as arrow from 'apache-arrow';
import { TablesService } from '../tables/tables.service';
import { TenantContext } from '../tenancy/tenant-context';
import { decodeSchema, IpcFileLayout, splitStream } from './arrow-ipc';
import { QueryRequest } from './dataplane.schemas';
import { LanceEngine } from '../../storage/lance-engine';
import { assertEngineSql } from '../../storage/engine-sql';
import { toEngineQuery } from './query-executor';
import { columnsOf, planQuery } from './query-plan';
import { DataTables } from './data-tables.service';
import { UsageMeter } from '../usage/usage-meter.service';

/** The SQL a query carries: its filter and, when columns are given as aliases, each alias's expression. */
function checkQuerySql(req: QueryRequest): void {
  assertEngineSql(req.filter, 'filter');
  const select = columnsOf(req.columns);
  if (select && !Array.isArray(select)) for (const [alias, expr] of Object.entries(select)) assertEngineSql(expr, `columns.${alias}`);
}

/**
 * Reads: count_rows, query (answered as a streamed Arrow IPC file) and explain_plan. The query itself is built by
 * the pure planner (query-plan.ts) and translated by query-executor.ts.
 */
@Injectable()
export class TableReadsService {
  constructor(
    private readonly tables: TablesService,
    private readonly engine: LanceEngine,
    private readonly data: DataTables,
    private readonly meter: UsageMeter,
  ) {}

  // ---------------------------------------------------------------- reads

  async countRows(
    t: TenantContext,
    id: string[],
    predicate?: string,
    version?: number,
    branch?: string,
  ): Promise<{ count: number; version: number }> {
    assertEngineSql(predicate, 'predicate');
    const row = await this.tables.get(t, id);
    if (!(await this.tables.hasData(row))) {
      this.data.assertNoBranch(id, branch);
      return { count: 0, version: 0 };
    }
    return this.engine.read(
      row.location,
      async (table) => ({ count: await table.countRows(predicate?.trim() ? predicate : undefined), version: await table.version() }),
      { version, branch },
    );
  }

  /**
   * Runs a query and answers an Arrow IPC file, streamed: the engine hands out each result batch as IPC bytes, which
   * are laid out into the file as they come (nothing is decoded in JavaScript, nothing held whole). Planning errors
   * and those of the first batch are answered as errors; a failure later cuts the answer short (the client sees a
   * truncated file, never a wrong one).
   */
  async query(t: TenantContext, id: string[], req: QueryRequest, timeoutMs?: number): Promise<{ body: Readable; version: number }> {
    checkQuerySql(req);
    const row = await this.data.written(t, id);
    const h = await this.engine.lease(row.location, { version: req.version, branch: req.branch });
    try {
      const version = await h.table.version();
      const q = await toEngineQuery(h.table, planQuery(req));
      const exec = (q as unknown as { nativeExecute?: (o?: { timeoutMs?: number }) => Promise<{ next(): Promise<Buffer | null> }> })
        .nativeExecute;
      if (typeof exec !== 'function') throw new Error('@lancedb/lancedb: query has no native batch iterator');
      const it = await exec.call(q, timeoutMs ? { timeoutMs } : undefined);
      const first = await it.next();
      const head = splitStream(first ?? Buffer.from(arrow.tableToIPC(new arrow.Table(await q.outputSchema()), 'stream')));
      if (head.length === 0 || head[0].kind !== 'schema') throw new Error('engine answered a stream without a schema');
      const layout = new IpcFileLayout(decodeSchema(head[0]));
      async function* file(): AsyncGenerator<Buffer> {
        yield* layout.start(head[0]);
        if (first) for (const m of head.slice(1)) yield* layout.add(m);
        for (let b = await it.next(); b; b = await it.next()) {
          for (const m of splitStream(b)) yield* layout.add(m);
        }
        yield* layout.finish();
      }
      const body = Readable.from(file(), { objectMode: false });
      body.once('close', h.release);
      this.meter.query(t.database.id);
      return { body, version };
    } catch (err) {
      h.release();
      throw this.engine.translate(err);
    }
  }

  /**
   * Runs the query and answers its plan with the metrics of the run (AnalyzeTableQueryPlan). Server paths in the plan
   * (a scan's `uri=`) are left out.
   */
  async analyzePlan(t: TenantContext, id: string[], req: QueryRequest): Promise<string> {
    checkQuerySql(req);
    const row = await this.data.written(t, id);
    const plan = await this.engine.read(row.location, async (table) => (await toEngineQuery(table, planQuery(req))).analyzePlan(), {
      version: req.version,
      branch: req.branch,
    });
    return plan.replace(/\buri=[^,\s]*/g, 'uri=<table>');
  }

  async explainPlan(t: TenantContext, id: string[], req: QueryRequest, verbose: boolean): Promise<string> {
    checkQuerySql(req);
    const row = await this.data.written(t, id);
    return this.engine.read(row.location, async (table) => (await toEngineQuery(table, planQuery(req))).explainPlan(verbose), {
      version: req.version,
      branch: req.branch,
    });
  }
}
