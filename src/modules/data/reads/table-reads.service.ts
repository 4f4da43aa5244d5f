import { Readable } from 'node:stream';
import { Inject, Injectable } from '@nestjs/common';
import * as arrow from 'apache-arrow';
import { LRUCache } from 'lru-cache';
import { TablesService } from '../../catalog';
import { TenantContext } from '../../identity';
import { decodeSchema, splitStream } from '../../../engine/arrow/arrow-ipc-message';
import { IpcFileLayout } from '../../../engine/arrow/arrow-ipc-file';
import { QueryRequest } from '../dataplane.schemas';
import { LanceEngine } from '../../../engine/lance/lance-engine';
import { assertEngineSql } from '../../../engine/lance/engine-sql';
import { toEngineQuery } from '../../../engine/lance/query-executor';
import { columnsOf, planQuery } from './query-plan';
import { DataTables } from '../data-tables.service';
import { UsageMeter } from '../../metering';
import { APP_CONFIG, AppConfig } from '../../../platform/config/config';
import { hintCache } from '../../../platform/runtime/hint-cache';

/** A query answer that ends within this many bytes is sent as one buffer; a longer one is streamed. */
const SMALL_ANSWER_BYTES = 1 << 20;

/** A query's answer: the Arrow IPC file (whole, or streamed) and the version it read. */
export interface QueryAnswer {
  body: Readable | Buffer;
  version: number;
}

/** Gives up an answer nobody will send: a streamed one is closed, which releases its table handle. */
function abandon(answer: Promise<QueryAnswer> | undefined): void {
  answer?.then(
    (a) => {
      if (a.body instanceof Readable) a.body.destroy();
    },
    () => undefined,
  );
}

/** The SQL a query carries: its filter and, when columns are given as aliases, each alias's expression. */
function checkQuerySql(req: QueryRequest): void {
  assertEngineSql(req.filter, 'filter');
  const select = columnsOf(req.columns);
  if (select && !Array.isArray(select)) for (const [alias, expr] of Object.entries(select)) assertEngineSql(expr, `columns.${alias}`);
}

/**
 * Reads: count_rows, query (answered as a streamed Arrow IPC file) and explain_plan. The query itself is built by
 * the pure planner (query-plan.ts) and translated by engine/lance/query-executor.ts.
 */
@Injectable()
export class TableReadsService {
  constructor(
    private readonly tables: TablesService,
    private readonly engine: LanceEngine,
    private readonly data: DataTables,
    private readonly meter: UsageMeter,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.lastSeen = hintCache<string>(config.tableHintCacheBytes, (location) => location.length);
  }

  /** Where each recently queried table was found, by database, catalog and name (a hint: see `query`). */
  private readonly lastSeen: LRUCache<string, string>;

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
   * Runs a query and answers an Arrow IPC file (see `answer`).
   *
   * The catalog lookup and the query run side by side: the query starts at the location where this table was last
   * found (by database, catalog and name) while the catalog confirms that it is still there, which takes the lookup's
   * round trip out of the answer's latency. Only a confirmed answer is given. When the catalog answers otherwise (the
   * table was dropped, renamed or made anew under the name, or never had data), the early query is abandoned and the
   * catalog's answer stands: an error, or the query run again where the table now is.
   */
  async query(t: TenantContext, id: string[], req: QueryRequest, timeoutMs?: number): Promise<QueryAnswer> {
    checkQuerySql(req);
    const key = `${t.database.id}\0${t.catalog}\0${id.join('\0')}`;
    const seen = this.lastSeen.get(key);
    const found = this.data.written(t, id);
    const early = seen === undefined ? undefined : this.answer(seen, req, timeoutMs);
    early?.catch(() => undefined); // its failure matters only once the catalog confirms the location (awaited below)
    let location: string;
    try {
      location = (await found).location;
    } catch (err) {
      abandon(early);
      throw err;
    }
    let answer: QueryAnswer;
    if (early && location === seen) {
      answer = await early;
    } else {
      abandon(early);
      this.lastSeen.set(key, location);
      answer = await this.answer(location, req, timeoutMs);
    }
    this.meter.query(t.database.id);
    return answer;
  }

  /**
   * The query's answer at a location. The engine hands out each result batch as IPC bytes, which are laid out into
   * the file as they come (nothing is decoded in JavaScript). An answer that ends within SMALL_ANSWER_BYTES (a top-k
   * search, a page of rows) is sent whole, as one buffer with its length; a longer one is streamed, never held whole.
   * Planning errors and those of the batches read before the answer starts are answered as errors; a failure later
   * cuts a streamed answer short (the client sees a truncated file, never a wrong one).
   */
  private async answer(location: string, req: QueryRequest, timeoutMs?: number): Promise<QueryAnswer> {
    const h = await this.engine.lease(location, { version: req.version, branch: req.branch });
    let streaming = false;
    try {
      // The version for the answer's header is read while the query runs, not before it: each looks up the latest
      // commit on its own either way, so a commit landing in between was already seen by one of them only.
      const version = h.table.version();
      version.catch(() => undefined); // awaited below unless the query fails first
      const q = await toEngineQuery(h.table, planQuery(req));
      const exec = (q as unknown as { nativeExecute?: (o?: { timeoutMs?: number }) => Promise<{ next(): Promise<Buffer | null> }> })
        .nativeExecute;
      if (typeof exec !== 'function') throw new Error('@lancedb/lancedb: query has no native batch iterator');
      const it = await exec.call(q, timeoutMs ? { timeoutMs } : undefined);
      const first = await it.next();
      const head = splitStream(first ?? Buffer.from(arrow.tableToIPC(new arrow.Table(await q.outputSchema()), 'stream')));
      if (head.length === 0 || head[0].kind !== 'schema') throw new Error('engine answered a stream without a schema');
      const layout = new IpcFileLayout(decodeSchema(head[0]));
      const chunks = layout.start(head[0]);
      if (first) for (const m of head.slice(1)) chunks.push(...layout.add(m));
      let size = chunks.reduce((n, b) => n + b.length, 0);
      let next = first ? await it.next() : null;
      while (next && size < SMALL_ANSWER_BYTES) {
        for (const m of splitStream(next)) {
          for (const b of layout.add(m)) {
            chunks.push(b);
            size += b.length;
          }
        }
        next = await it.next();
      }
      if (!next) {
        chunks.push(...layout.finish());
        return { version: await version, body: Buffer.concat(chunks) };
      }
      const rest = next;
      async function* file(): AsyncGenerator<Buffer> {
        yield* chunks;
        for (let b: Buffer | null = rest; b; b = await it.next()) {
          for (const m of splitStream(b)) yield* layout.add(m);
        }
        yield* layout.finish();
      }
      const answer = { version: await version, body: Readable.from(file(), { objectMode: false }) };
      answer.body.once('close', h.release);
      streaming = true;
      return answer;
    } catch (err) {
      throw this.engine.translate(err);
    } finally {
      if (!streaming) h.release();
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
