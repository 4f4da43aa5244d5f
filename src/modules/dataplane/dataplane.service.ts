import { Readable } from 'node:stream';
import { Inject, Injectable } from '@nestjs/common';
import * as lancedb from '@lancedb/lancedb';
import * as arrow from 'apache-arrow';
import { ApiError, ErrorCode, Errors } from '../../common/errors';
import type {
  CreateTableResponse,
  DeleteFromTableResponse,
  DescribeTableIndexStatsResponse,
  EmptyResponse,
  EnterpriseCreateTableResponse,
  InsertIntoTableResponse,
  ListTableIndicesResponse,
  ListTableVersionsResponse,
  MergeInsertIntoTableResponse,
  UpdateTableResponse,
  VersionResponse,
} from '../../common/response-schemas';
import { APP_CONFIG, AppConfig } from '../../config/config';
import type { PendingWork } from '../reclaim/pending-locations.service';
import { TableRow } from '../tables/tables.repository';
import { TablesService } from '../tables/tables.service';
import { TableStorage } from '../../storage/table-storage.service';
import { TenantContext } from '../tenancy/tenant-context';
import { BufferedIpc, decodeSchema, IpcFileLayout, readWholeStream, splitStream, streamInChunks } from './arrow-ipc';
import { CreateIndexRequest, QueryRequest } from './dataplane.schemas';
import { LanceEngine } from '../../storage/lance-engine';
import { AuditService } from '../audit/audit.service';
import { assertEngineSql } from '../../storage/engine-sql';
import { toEngineQuery } from './query-executor';
import { columnsOf, distanceOf, planQuery } from './query-plan';

type Body = AsyncIterable<Buffer | Uint8Array | string>;
export type CreateMode = 'create' | 'existok' | 'overwrite';
/** Which client dialect a request speaks: the official remote client (`db://`) or the Lance Namespace spec. */
export type Dialect = 'remote' | 'spec';

const display = (id: string[]) => id.join('$');

export interface MergeOptions {
  on: string[];
  whenMatchedUpdateAll: boolean;
  whenMatchedUpdateAllFilt?: string;
  whenNotMatchedInsertAll: boolean;
  whenNotMatchedBySourceDelete: boolean;
  whenNotMatchedBySourceDeleteFilt?: string;
  useIndex: boolean;
  timeoutMs?: number;
}

/** Index type names as the remote client and the spec spell them (the engine reports e.g. `IvfHnswSq`). */
export function canonicalIndexType(t: string): string;
export function canonicalIndexType(t: string | undefined): string | undefined;
export function canonicalIndexType(t: string | undefined): string | undefined {
  if (!t) return t;
  const special: Record<string, string> = { BTree: 'BTREE', Inverted: 'FTS', FTS: 'FTS', Fts: 'FTS', LabelList: 'LABEL_LIST' };
  if (special[t]) return special[t];
  return t.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase();
}

/** The largest value the engine's index parameters hold (u32); larger ones wrap around inside the native code. */
const U32_MAX = 2 ** 32 - 1;

/**
 * The stemming languages of Lance's FTS tokenizer, spelled as the engine wants them. The native `Index.fts`
 * factory aborts the whole process (a panic outside any catch) on any other name, including a wrong case.
 */
export const FTS_LANGUAGES = [
  'Arabic', 'Danish', 'Dutch', 'English', 'Finnish', 'French', 'German', 'Greek', 'Hungarian', 'Italian',
  'Norwegian', 'Portuguese', 'Romanian', 'Russian', 'Spanish', 'Swedish', 'Tamil', 'Turkish',
] as const;

/** Built-in base tokenizers, and model-backed ones by a plain model name (never a path: the engine opens it as one). */
const BASE_TOKENIZER = /^(?:simple|whitespace|raw|ngram|icu|(?:jieba|lindera)(?:\/[A-Za-z0-9_-]+)?)$/;

/**
 * Index parameters the engine cannot take, refused before it sees them (400, code 13): zero partitions or
 * iterations panic inside the engine, values beyond u32 wrap around (2^32 partitions become 0), and an unknown FTS
 * language aborts the process. Returns the FTS language in the engine's spelling.
 */
export function checkIndexParams(req: CreateIndexRequest): { language?: string } {
  const ints: Array<[string, number | undefined]> = [
    ['num_partitions', req.num_partitions],
    ['num_sub_vectors', req.num_sub_vectors],
    ['num_bits', req.num_bits],
    ['sample_rate', req.sample_rate],
    ['max_iterations', req.max_iterations],
    ['m', req.m],
    ['ef_construction', req.ef_construction],
    ['max_token_length', req.max_token_length],
    ['ngram_min_length', req.ngram_min_length],
    ['ngram_max_length', req.ngram_max_length],
  ];
  for (const [name, v] of ints) {
    if (v !== undefined && v > U32_MAX) throw Errors.invalidInput(`${name} must be at most ${U32_MAX}, got ${v}`);
  }
  for (const [name, v] of [['num_partitions', req.num_partitions], ['max_iterations', req.max_iterations], ['sample_rate', req.sample_rate]] as const) {
    if (v === 0) throw Errors.invalidInput(`${name} must be at least 1`);
  }
  if (req.base_tokenizer !== undefined && !BASE_TOKENIZER.test(req.base_tokenizer)) {
    throw Errors.invalidInput(
      `unsupported base_tokenizer '${req.base_tokenizer}'; expected simple, whitespace, raw, ngram, icu, or jieba/<model> or lindera/<model>`,
    );
  }
  if (req.language === undefined) return {};
  const language = FTS_LANGUAGES.find((l) => l.toLowerCase() === req.language!.toLowerCase());
  if (!language) throw Errors.invalidInput(`unsupported language '${req.language}'; expected one of ${FTS_LANGUAGES.join(', ')}`);
  return { language };
}

const VECTOR_INDEX_TYPES = new Set(['IVF_PQ', 'VECTOR', 'IVF_FLAT', 'IVF_RQ', 'IVF_HNSW_SQ', 'IVF_HNSW_PQ']);

/** The SQL a query carries: its filter and, when columns are given as aliases, each alias's expression. */
function checkQuerySql(req: QueryRequest): void {
  assertEngineSql(req.filter, 'filter');
  const select = columnsOf(req.columns);
  if (select && !Array.isArray(select)) for (const [alias, expr] of Object.entries(select)) assertEngineSql(expr, `columns.${alias}`);
}

/**
 * The compute engine's rules: tables are found through the catalog (TablesService), data operations run in the
 * native Lance engine at the table's location. Every accepted write commits exactly once, as its last step that can
 * fail; what follows a commit never turns the answer into an error.
 */
@Injectable()
export class DataplaneService {
  private readonly limits: AppConfig['arrow'];

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly tables: TablesService,
    private readonly storage: TableStorage,
    private readonly engine: LanceEngine,
    private readonly audit: AuditService,
  ) {
    this.limits = config.arrow;
  }

  /**
   * One engine commit of an audited write, with its audit record written first (the change is in Lance, where no
   * Postgres transaction can hold both): if the record cannot be written nothing is committed and the request
   * fails; if the commit fails the record is withdrawn; after the commit it is confirmed with `details`.
   */
  private async commit<T>(fn: () => Promise<T>, details: (r: T) => Record<string, unknown>): Promise<T> {
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

  private async written(t: TenantContext, id: string[]): Promise<TableRow> {
    const row = await this.tables.get(t, id);
    if (!(await this.tables.hasData(row))) throw Errors.invalidInput(`table '${display(id)}' has no data yet (declared only)`);
    return row;
  }

  // ---------------------------------------------------------------- create / insert / merge

  /**
   * Creates a table from an Arrow stream. A new table is streamed chunk by chunk into a fresh folder that nothing
   * refers to yet, and registered only once all of it is written: a bad, truncated or oversized body leaves nothing
   * registered and its folder removed.
   */
  async create(
    t: TenantContext,
    id: string[],
    mode: CreateMode,
    body: Body,
    dialect: Dialect,
    properties: Record<string, string> = {},
  ): Promise<CreateTableResponse> {
    const existing = await this.tables.lookup(t, id);
    if (existing && (await this.tables.hasData(existing))) {
      if (mode === 'create') throw dialect === 'remote' ? Errors.tableAlreadyExistsRemote(display(id)) : Errors.tableAlreadyExists(display(id));
      const location = this.storage.absolute(existing.location);
      if (mode === 'existok') {
        this.audit.nothingChanged();
        return { location, properties: { ...existing.properties } };
      }
      const data = await readWholeStream(body, this.limits.bufferedBodyBytes);
      const work = await this.tables.beginInPlace(t, existing);
      const version = await this.inPlace(work, () =>
        this.commit(
          () => this.engine.create(existing.location, data.file, 'overwrite'),
          (v) => ({ version: v, mode: 'overwrite', num_rows: data.rows }),
        ),
      );
      return { location, version, properties: { ...existing.properties } };
    }
    if (existing) {
      // Declared only: its first version is written at the declared location, in one commit.
      const data = await readWholeStream(body, this.limits.bufferedBodyBytes);
      const work = await this.tables.beginInPlace(t, existing);
      let version: number;
      try {
        version = await this.inPlace(work, () =>
          this.commit(() => this.engine.create(existing.location, data.file, 'create'), (v) => ({ version: v, num_rows: data.rows })),
        );
      } catch (err) {
        if (dialect === 'remote' && err instanceof ApiError && err.code === ErrorCode.TableAlreadyExists) {
          throw Errors.tableAlreadyExistsRemote(display(id));
        }
        throw err;
      }
      await this.markWrittenQuietly(existing);
      return { location: this.storage.absolute(existing.location), version, properties: { ...existing.properties } };
    }
    return this.createStreamed(t, id, body, dialect, properties);
  }

  /**
   * Enterprise `POST /v1/tables/{name}` and new tables of create_table: streamed, registered at the end. The fresh
   * folder is recorded as pending (in the lookup's statement) before anything is written, and the record is handed
   * to the table row when it is registered: a crash in between leaves a record the reclaimer finishes.
   */
  async createStreamed(t: TenantContext, id: string[], body: Body, dialect: Dialect, properties: Record<string, string> = {}): Promise<EnterpriseCreateTableResponse> {
    const location = this.tables.newLocation(t);
    // Refuse a taken name before reading the body; registering at the end settles races between creators.
    const { existing, work } = await this.tables.reserveNew(t, id, location);
    if (existing || !work) {
      throw dialect === 'remote' ? Errors.tableAlreadyExistsRemote(display(id)) : Errors.tableAlreadyExists(display(id));
    }
    try {
      const result = await streamInChunks(body, this.limits.streamBodyBytes, this.limits.ingestChunkBytes, async (file, _rows, i) => {
        work.assertHeld();
        if (i === 0) await this.engine.create(location, file, 'create');
        else await this.engine.append(location, file);
      });
      const version = await this.engine.withNative(location, (n) => n.version());
      // Registering is what makes the table exist: its audit record commits with the catalog row.
      await this.tables.registerWritten(t, id, work, properties, { version, num_rows: result.rows });
      return {
        name: id[id.length - 1],
        location: this.storage.absolute(location),
        version,
        num_rows: result.rows,
        properties,
      };
    } catch (err) {
      // Whatever was written goes; should that fail, the record stays for the reclaimer.
      await this.storage.remove(location).then(
        () => work.done(),
        () => work.abandon(),
      );
      if (dialect === 'remote' && err instanceof ApiError && err.code === ErrorCode.TableAlreadyExists) {
        throw Errors.tableAlreadyExistsRemote(display(id));
      }
      throw err;
    }
  }

  async insert(t: TenantContext, id: string[], mode: 'append' | 'overwrite', body: Body): Promise<InsertIntoTableResponse> {
    const { row, work } = await this.tables.getForWrite(t, id);
    const data = await this.bodyFor(work, body);
    return this.inPlace(work, async () => {
      if (!(await this.tables.hasData(row))) {
        const version = await this.commit(() => this.engine.create(row.location, data.file, 'create'), (v) => ({ version: v, num_rows: data.rows }));
        await this.markWrittenQuietly(row);
        return { version, num_inserted_rows: data.rows };
      }
      if (data.batches === 0 && mode === 'append') {
        this.audit.nothingChanged();
        return { version: await this.engine.withNative(row.location, (n) => n.version()), num_inserted_rows: 0 };
      }
      const version = await this.commit(() => this.engine.append(row.location, data.file, mode), (v) => ({ version: v, mode, num_rows: data.rows }));
      return { version, num_inserted_rows: data.rows };
    });
  }

  async mergeInsert(t: TenantContext, id: string[], opts: MergeOptions, body: Body): Promise<MergeInsertIntoTableResponse> {
    assertEngineSql(opts.whenMatchedUpdateAllFilt, 'when_matched_update_all_filt');
    assertEngineSql(opts.whenNotMatchedBySourceDeleteFilt, 'when_not_matched_by_source_delete_filt');
    const { row, work } = await this.tables.getForWrite(t, id);
    const data = await this.bodyFor(work, body);
    return this.inPlace(work, () => this.merge(row, opts, data));
  }

  private async merge(row: TableRow, opts: MergeOptions, data: BufferedIpc) {
    if (!(await this.tables.hasData(row))) {
      const version = await this.commit(() => this.engine.create(row.location, data.file, 'create'), (v) => ({ version: v, on: opts.on, num_rows: data.rows }));
      await this.markWrittenQuietly(row);
      return { version, num_inserted_rows: data.rows, num_updated_rows: 0, num_deleted_rows: 0 };
    }
    const merged = (r: { version: number; num_inserted_rows: number; num_updated_rows: number; num_deleted_rows: number }) => ({
      version: r.version,
      on: opts.on,
      num_inserted_rows: r.num_inserted_rows,
      num_updated_rows: r.num_updated_rows,
      num_deleted_rows: r.num_deleted_rows,
    });
    return this.commit(() => this.engine.withNative(row.location, async (n) => {
      let b = n.mergeInsert(opts.on);
      if (opts.whenMatchedUpdateAllFilt) b = b.whenMatchedUpdateAll(opts.whenMatchedUpdateAllFilt);
      else if (opts.whenMatchedUpdateAll) b = b.whenMatchedUpdateAll();
      if (opts.whenNotMatchedInsertAll) b = b.whenNotMatchedInsertAll();
      if (opts.whenNotMatchedBySourceDeleteFilt) b = b.whenNotMatchedBySourceDelete(opts.whenNotMatchedBySourceDeleteFilt);
      else if (opts.whenNotMatchedBySourceDelete) b = b.whenNotMatchedBySourceDelete();
      if (!opts.useIndex) b = b.useIndex(false);
      if (opts.timeoutMs) b.setTimeout(opts.timeoutMs);
      const r = await b.execute(data.file);
      return {
        version: r.version,
        num_inserted_rows: r.numInsertedRows,
        num_updated_rows: r.numUpdatedRows,
        num_deleted_rows: r.numDeletedRows,
        ...(typeof r.numAttempts === 'number' ? { num_attempts: r.numAttempts } : {}),
      };
    }), merged);
  }

  /** Reads a buffered body for a recorded in-place write; a bad body ends the work (nothing was written). */
  private async bodyFor(work: PendingWork, body: Body) {
    try {
      return await readWholeStream(body, this.limits.bufferedBodyBytes);
    } catch (err) {
      work.done();
      throw err;
    }
  }

  /**
   * Runs an in-place write recorded as pending. Success, or a refusal of the request (4xx other than a commit
   * conflict), ends the record; any other failure may have left data files in the table's folder before the
   * commit, so the record is left for the reclaimer, which removes the files no version references.
   */
  private async inPlace<T>(work: PendingWork, write: () => Promise<T>): Promise<T> {
    let result: T;
    try {
      work.assertHeld(); // the body may have been slow to arrive
      result = await write();
    } catch (err) {
      if (err instanceof ApiError && err.status < 500 && err.status !== 409) work.done();
      else work.abandon();
      throw err;
    }
    work.done();
    return result;
  }

  private async markWrittenQuietly(row: TableRow): Promise<void> {
    // After a commit nothing may fail the request: the flag is an optimisation, found again from storage later.
    await this.tables.markWritten(row).catch(() => undefined);
  }

  // ---------------------------------------------------------------- reads

  async countRows(t: TenantContext, id: string[], predicate?: string, version?: number): Promise<{ count: number; version: number }> {
    assertEngineSql(predicate, 'predicate');
    const row = await this.tables.get(t, id);
    if (!(await this.tables.hasData(row))) return { count: 0, version: 0 };
    return this.engine.withTable(
      row.location,
      async (table) => ({ count: await table.countRows(predicate?.trim() ? predicate : undefined), version: await table.version() }),
      version,
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
    const row = await this.written(t, id);
    const h = await this.engine.open(row.location, req.version);
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
      body.once('close', h.close);
      return { body, version };
    } catch (err) {
      h.close();
      throw this.engine.translate(err);
    }
  }

  async explainPlan(t: TenantContext, id: string[], req: QueryRequest, verbose: boolean): Promise<string> {
    checkQuerySql(req);
    const row = await this.written(t, id);
    return this.engine.withTable(row.location, async (table) => (await toEngineQuery(table, planQuery(req))).explainPlan(verbose), req.version);
  }

  // ---------------------------------------------------------------- mutations

  async update(t: TenantContext, id: string[], updates: string[][], predicate?: string): Promise<UpdateTableResponse> {
    const seen = new Set<string>();
    const pairs = updates.map((u, i): [string, string] => {
      if (u.length !== 2) throw Errors.invalidInput(`updates[${i}] must be a [column, expression] pair, got ${u.length} elements`);
      if (!u[0]) throw Errors.invalidInput(`updates[${i}] has an empty column name`);
      if (seen.has(u[0])) throw Errors.invalidInput(`cannot update column '${u[0]}' more than once`);
      seen.add(u[0]);
      assertEngineSql(u[1], `updates[${i}] expression`);
      return [u[0], u[1]];
    });
    assertEngineSql(predicate, 'predicate');
    const row = await this.written(t, id);
    return this.commit(
      () =>
        this.engine.withNative(row.location, async (n) => {
          const r = await n.update(predicate?.trim() ? predicate : undefined, pairs);
          return { rows_updated: r.rowsUpdated, updated_rows: r.rowsUpdated, version: r.version };
        }),
      (r) => ({ version: r.version, rows_updated: r.rows_updated }),
    );
  }

  async delete(t: TenantContext, id: string[], predicate: string): Promise<DeleteFromTableResponse> {
    if (!predicate.trim()) throw Errors.invalidInput('delete requires a non-empty predicate');
    assertEngineSql(predicate, 'predicate');
    const row = await this.written(t, id);
    return this.commit(
      () =>
        this.engine.withNative(row.location, async (n) => {
          const r = await n.delete(predicate);
          return { num_deleted_rows: r.numDeletedRows, version: r.version };
        }),
      (r) => ({ version: r.version, num_deleted_rows: r.num_deleted_rows }),
    );
  }

  // ---------------------------------------------------------------- indices

  async createIndex(t: TenantContext, id: string[], req: CreateIndexRequest): Promise<EmptyResponse> {
    const type = req.index_type.trim().toUpperCase();
    const { language } = checkIndexParams(req);
    const dt = distanceOf(req.metric_type ?? req.distance_type);
    const vec = {
      distanceType: dt === 'hamming' ? undefined : (dt as 'l2' | 'cosine' | 'dot' | undefined),
      numPartitions: req.num_partitions,
      maxIterations: req.max_iterations,
      sampleRate: req.sample_rate,
    };
    let config: lancedb.Index;
    switch (type) {
      case 'BTREE':
      case 'SCALAR':
        config = lancedb.Index.btree();
        break;
      case 'BITMAP':
        config = lancedb.Index.bitmap();
        break;
      case 'LABEL_LIST':
      case 'LABELLIST':
        config = lancedb.Index.labelList();
        break;
      case 'FTS':
      case 'INVERTED':
        config = lancedb.Index.fts({
          withPosition: req.with_position,
          baseTokenizer: req.base_tokenizer as any,
          language,
          maxTokenLength: req.max_token_length,
          lowercase: req.lower_case,
          stem: req.stem,
          removeStopWords: req.remove_stop_words,
          asciiFolding: req.ascii_folding,
          customStopWords: req.custom_stop_words ?? undefined,
          ngramMinLength: req.ngram_min_length,
          ngramMaxLength: req.ngram_max_length,
          prefixOnly: req.prefix_only,
        });
        break;
      case 'IVF_PQ':
      case 'VECTOR':
        config = lancedb.Index.ivfPq({ ...vec, numSubVectors: req.num_sub_vectors, numBits: req.num_bits });
        break;
      case 'IVF_FLAT':
        config = lancedb.Index.ivfFlat({ ...vec, distanceType: dt as 'l2' | 'cosine' | 'dot' | 'hamming' | undefined });
        break;
      case 'IVF_RQ':
        config = lancedb.Index.ivfRq({ ...vec, numBits: req.num_bits });
        break;
      case 'IVF_HNSW_SQ':
        config = lancedb.Index.hnswSq({ ...vec, m: req.m, efConstruction: req.ef_construction });
        break;
      case 'IVF_HNSW_PQ':
        config = lancedb.Index.hnswPq({ ...vec, numSubVectors: req.num_sub_vectors, m: req.m, efConstruction: req.ef_construction });
        break;
      default:
        throw Errors.invalidInput(`Unsupported index_type '${req.index_type}'`);
    }
    const row = await this.written(t, id);
    await this.engine.withTable(row.location, async (table) => {
      const schema = await table.schema();
      if (!schema.fields.some((f) => f.name === req.column.split('.')[0])) throw Errors.columnNotFound(`column '${req.column}' not found`);
      if (req.num_partitions !== undefined && VECTOR_INDEX_TYPES.has(type)) {
        // KMeans cannot train more centroids than there are rows; say so before the engine spends any work on it.
        const rows = await table.countRows();
        if (req.num_partitions > rows) {
          throw Errors.invalidInput(`num_partitions (${req.num_partitions}) must not exceed the number of rows (${rows})`);
        }
      }
      await this.commit(
        () => table.createIndex(req.column, { config, ...(req.name ? { name: req.name } : {}), replace: req.replace ?? true }),
        () => ({}),
      );
    });
    return {};
  }

  async listIndices(t: TenantContext, id: string[], version?: number): Promise<ListTableIndicesResponse> {
    const row = await this.written(t, id);
    return this.engine.withTable(
      row.location,
      async (table) => ({
        indexes: (await table.listIndices()).map((i) => ({
          index_name: i.name,
          index_uuid: i.indexUuid ?? i.name,
          columns: i.columns,
          index_type: canonicalIndexType(i.indexType),
          status: 'SUCCEEDED',
          ...(i.numIndexedRows !== undefined ? { num_indexed_rows: i.numIndexedRows } : {}),
          ...(i.numUnindexedRows !== undefined ? { num_unindexed_rows: i.numUnindexedRows } : {}),
          ...(i.sizeBytes !== undefined ? { size_bytes: i.sizeBytes } : {}),
          ...(i.numSegments !== undefined ? { num_segments: i.numSegments } : {}),
          ...(i.createdAt ? { created_at: i.createdAt.toISOString() } : {}),
          ...(i.indexVersion !== undefined ? { index_version: i.indexVersion } : {}),
        })),
      }),
      version,
    );
  }

  async indexStats(t: TenantContext, id: string[], name: string, version?: number): Promise<DescribeTableIndexStatsResponse> {
    const row = await this.written(t, id);
    return this.engine.withTable(
      row.location,
      async (table) => {
        const s = await table.indexStats(name);
        if (!s) throw Errors.indexNotFound(`index '${name}' not found`);
        return {
          num_indexed_rows: s.numIndexedRows,
          num_unindexed_rows: s.numUnindexedRows,
          index_type: canonicalIndexType(s.indexType),
          ...(s.distanceType ? { distance_type: s.distanceType } : {}),
          ...(s.numIndices !== undefined ? { num_indices: s.numIndices } : {}),
        };
      },
      version,
    );
  }

  async dropIndex(t: TenantContext, id: string[], name: string): Promise<EmptyResponse> {
    const row = await this.written(t, id);
    await this.engine.withTable(row.location, async (table) => {
      if (!(await table.listIndices()).some((i) => i.name === name)) throw Errors.indexNotFound(`index '${name}' not found`);
      await this.commit(() => table.dropIndex(name), () => ({ name }));
    });
    return {};
  }

  // ---------------------------------------------------------------- versions and schema evolution

  async listVersions(t: TenantContext, id: string[]): Promise<ListTableVersionsResponse> {
    const row = await this.written(t, id);
    return this.engine.withTable(row.location, async (table) => ({
      versions: (await table.listVersions()).map((v) => ({
        version: v.version,
        timestamp: v.timestamp.toISOString(),
        metadata: v.metadata ?? {},
      })),
    }));
  }

  async restore(t: TenantContext, id: string[], version: number | undefined): Promise<VersionResponse> {
    if (version === undefined) throw Errors.invalidInput('restore requires a version');
    const row = await this.written(t, id);
    return this.engine.withTable(
      row.location,
      async (table) => ({
        version: await this.commit(
          async () => {
            await table.restore();
            return table.version();
          },
          (v) => ({ version: v }),
        ),
      }),
      version,
    );
  }

  async addColumns(t: TenantContext, id: string[], columns: Array<{ name: string; expression: string }>): Promise<VersionResponse> {
    columns.forEach((c, i) => assertEngineSql(c.expression, `new_columns[${i}].expression`));
    const row = await this.written(t, id);
    return this.engine.withTable(row.location, async (table) => {
      const r = await this.commit(
        () => table.addColumns(columns.map((c) => ({ name: c.name, valueSql: c.expression }))),
        (x) => ({ version: x.version, columns: columns.map((c) => c.name) }),
      );
      return { version: r.version };
    });
  }

  async alterColumns(
    t: TenantContext,
    id: string[],
    alterations: Array<{ path: string; rename?: string; nullable?: boolean; data_type?: { type: string } | null }>,
  ): Promise<VersionResponse> {
    const mapped = alterations.map((a) => {
      if (a.rename === undefined && a.nullable === undefined && !a.data_type) {
        throw Errors.invalidInput(`alteration of '${a.path}' changes nothing`);
      }
      return {
        path: a.path,
        ...(a.rename !== undefined ? { rename: a.rename } : {}),
        ...(a.nullable !== undefined ? { nullable: a.nullable } : {}),
        ...(a.data_type ? { dataType: this.arrowType(a.data_type.type) } : {}),
      };
    });
    const row = await this.written(t, id);
    return this.engine.withTable(row.location, async (table) => ({
      version: (await this.commit(() => table.alterColumns(mapped), (x) => ({ version: x.version, columns: mapped.map((a) => a.path) }))).version,
    }));
  }

  private arrowType(name: string): arrow.DataType {
    const types: Record<string, () => arrow.DataType> = {
      int8: () => new arrow.Int8(),
      int16: () => new arrow.Int16(),
      int32: () => new arrow.Int32(),
      int64: () => new arrow.Int64(),
      uint8: () => new arrow.Uint8(),
      uint16: () => new arrow.Uint16(),
      uint32: () => new arrow.Uint32(),
      uint64: () => new arrow.Uint64(),
      halffloat: () => new arrow.Float16(),
      float: () => new arrow.Float32(),
      double: () => new arrow.Float64(),
      string: () => new arrow.Utf8(),
      large_string: () => new arrow.LargeUtf8(),
      binary: () => new arrow.Binary(),
      large_binary: () => new arrow.LargeBinary(),
      bool: () => new arrow.Bool(),
    };
    const make = types[name];
    if (!make) throw Errors.invalidInput(`unsupported data_type '${name}' in alter_columns`);
    return make();
  }

  async dropColumns(t: TenantContext, id: string[], columns: string[]): Promise<VersionResponse> {
    const row = await this.written(t, id);
    return this.engine.withTable(row.location, async (table) => ({
      version: (await this.commit(() => table.dropColumns(columns), (x) => ({ version: x.version }))).version,
    }));
  }
}
