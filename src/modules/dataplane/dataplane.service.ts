import { Readable } from 'node:stream';
import { Inject, Injectable } from '@nestjs/common';
import * as lancedb from '@lancedb/lancedb';
import * as arrow from 'apache-arrow';
import { ApiError, ErrorCode, Errors } from '../../common/errors';
import { APP_CONFIG, AppConfig } from '../../config/config';
import { TableRow } from '../tables/tables.repository';
import { TablesService } from '../tables/tables.service';
import { TableStorage } from '../../storage/table-storage.service';
import { TenantContext } from '../tenancy/tenant-context';
import { decodeSchema, IpcFileLayout, readWholeStream, splitStream, streamInChunks } from './arrow-ipc';
import { CreateIndexRequest, QueryRequest } from './dataplane.schemas';
import { LanceEngine } from '../../storage/lance-engine';

type Body = AsyncIterable<Buffer | Uint8Array | string>;
export type CreateMode = 'create' | 'existok' | 'overwrite';
/** Which client dialect a request speaks: the official remote client (`db://`) or the Lance Namespace spec. */
export type Dialect = 'remote' | 'spec';

const display = (id: string[]) => id.join('$');
/** `k` at or above this means "no limit" (the remote client sends i64::MAX). */
const UNLIMITED_K = 2 ** 31;

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
export function canonicalIndexType(t: string | undefined): string | undefined {
  if (!t) return t;
  const special: Record<string, string> = { BTree: 'BTREE', Inverted: 'FTS', FTS: 'FTS', Fts: 'FTS', LabelList: 'LABEL_LIST' };
  if (special[t]) return special[t];
  return t.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase();
}

function distance(v: string | undefined): 'l2' | 'cosine' | 'dot' | 'hamming' | undefined {
  if (!v) return undefined;
  const d = v.toLowerCase();
  if (d === 'l2' || d === 'euclidean') return 'l2';
  if (d === 'cosine') return 'cosine';
  if (d === 'dot' || d === 'inner_product') return 'dot';
  if (d === 'hamming') return 'hamming';
  throw Errors.invalidInput(`unsupported distance type '${v}'`);
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
  ) {
    this.limits = config.arrow;
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
  ): Promise<Record<string, unknown>> {
    const existing = await this.tables.lookup(t, id);
    if (existing && (await this.tables.hasData(existing))) {
      if (mode === 'create') throw dialect === 'remote' ? Errors.tableAlreadyExistsRemote(display(id)) : Errors.tableAlreadyExists(display(id));
      const location = this.storage.absolute(existing.location);
      if (mode === 'existok') return { location, properties: { ...existing.properties } };
      const data = await readWholeStream(body, this.limits.bufferedBodyBytes);
      const version = await this.engine.create(existing.location, data.file, 'overwrite');
      return { location, version, properties: { ...existing.properties } };
    }
    if (existing) {
      // Declared only: its first version is written at the declared location, in one commit.
      const data = await readWholeStream(body, this.limits.bufferedBodyBytes);
      let version: number;
      try {
        version = await this.engine.create(existing.location, data.file, 'create');
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

  /** Enterprise `POST /v1/tables/{name}` and new tables of create_table: streamed, registered at the end. */
  async createStreamed(t: TenantContext, id: string[], body: Body, dialect: Dialect, properties: Record<string, string> = {}) {
    // Refuse a taken name before reading the body; registering at the end settles races between creators.
    if (await this.tables.lookup(t, id)) {
      throw dialect === 'remote' ? Errors.tableAlreadyExistsRemote(display(id)) : Errors.tableAlreadyExists(display(id));
    }
    const location = this.tables.newLocation(t);
    try {
      const result = await streamInChunks(body, this.limits.streamBodyBytes, this.limits.ingestChunkBytes, async (file, _rows, i) => {
        if (i === 0) await this.engine.create(location, file, 'create');
        else await this.engine.append(location, file);
      });
      const version = await this.engine.withNative(location, (n) => n.version());
      await this.tables.registerWritten(t, id, location, properties);
      return {
        name: id[id.length - 1],
        location: this.storage.absolute(location),
        version,
        num_rows: result.rows,
        properties,
      };
    } catch (err) {
      await this.storage.remove(location).catch(() => undefined);
      if (dialect === 'remote' && err instanceof ApiError && err.code === ErrorCode.TableAlreadyExists) {
        throw Errors.tableAlreadyExistsRemote(display(id));
      }
      throw err;
    }
  }

  async insert(t: TenantContext, id: string[], mode: 'append' | 'overwrite', body: Body) {
    const row = await this.tables.get(t, id);
    const data = await readWholeStream(body, this.limits.bufferedBodyBytes);
    if (!(await this.tables.hasData(row))) {
      const version = await this.engine.create(row.location, data.file, 'create');
      await this.markWrittenQuietly(row);
      return { version, num_inserted_rows: data.rows };
    }
    if (data.batches === 0 && mode === 'append') {
      return { version: await this.engine.withNative(row.location, (n) => n.version()), num_inserted_rows: 0 };
    }
    const version = await this.engine.append(row.location, data.file, mode);
    return { version, num_inserted_rows: data.rows };
  }

  async mergeInsert(t: TenantContext, id: string[], opts: MergeOptions, body: Body) {
    const row = await this.tables.get(t, id);
    const data = await readWholeStream(body, this.limits.bufferedBodyBytes);
    if (!(await this.tables.hasData(row))) {
      const version = await this.engine.create(row.location, data.file, 'create');
      await this.markWrittenQuietly(row);
      return { version, num_inserted_rows: data.rows, num_updated_rows: 0, num_deleted_rows: 0 };
    }
    return this.engine.withNative(row.location, async (n) => {
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
    });
  }

  private async markWrittenQuietly(row: TableRow): Promise<void> {
    // After a commit nothing may fail the request: the flag is an optimisation, found again from storage later.
    await this.tables.markWritten(row).catch(() => undefined);
  }

  // ---------------------------------------------------------------- reads

  async countRows(t: TenantContext, id: string[], predicate?: string, version?: number): Promise<{ count: number; version: number }> {
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
    const row = await this.written(t, id);
    const h = await this.engine.open(row.location, req.version);
    try {
      const version = await h.table.version();
      const q = await this.buildQuery(h.table, req);
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
    const row = await this.written(t, id);
    return this.engine.withTable(row.location, async (table) => (await this.buildQuery(table, req)).explainPlan(verbose), req.version);
  }

  /** Both dialects of a query request, as one engine query. */
  private async buildQuery(table: lancedb.Table, req: QueryRequest): Promise<lancedb.Query | lancedb.VectorQuery> {
    const vectors = this.vectorsOf(req.vector);
    const fts = this.ftsOf(req.full_text_query);
    const k = req.k === undefined || req.k === null ? undefined : req.k;
    const unlimited = k !== undefined && k >= UNLIMITED_K;
    let q: lancedb.Query | lancedb.VectorQuery = table.query();
    if (vectors.length > 0) {
      let vq = table.query().nearestTo(vectors[0]);
      for (const v of vectors.slice(1)) vq = vq.addQueryVector(v);
      if (req.vector_column) vq = vq.column(req.vector_column);
      const dt = distance(req.distance_type);
      if (dt) vq = vq.distanceType(dt as 'l2' | 'cosine' | 'dot');
      const min = req.minimum_nprobes ?? req.nprobes;
      const max = req.maximum_nprobes;
      if (max !== undefined && max > 0) {
        if (min !== undefined) vq = vq.minimumNprobes(min);
        vq = vq.maximumNprobes(max);
      } else if (min !== undefined) {
        vq = req.maximum_nprobes === 0 ? vq.minimumNprobes(min) : vq.nprobes(min);
      }
      if (req.ef !== undefined) vq = vq.ef(req.ef);
      if (req.refine_factor !== undefined) vq = vq.refineFactor(req.refine_factor);
      if (req.lower_bound !== undefined || req.upper_bound !== undefined) vq = vq.distanceRange(req.lower_bound, req.upper_bound);
      if (req.bypass_vector_index) vq = vq.bypassVectorIndex();
      if (req.prefilter === false) vq = vq.postfilter();
      const limit = k === undefined || k === 0 ? 10 : unlimited ? Math.max(await table.countRows(), 1) : k;
      vq = vq.limit(limit);
      if (fts) vq = vq.fullTextSearch(fts.query, fts.columns ? { columns: fts.columns } : undefined);
      q = vq;
    } else {
      if (fts) q = q.fullTextSearch(fts.query, fts.columns ? { columns: fts.columns } : undefined);
      if (k !== undefined && k > 0 && !unlimited) q = q.limit(k);
      else if (fts && k === undefined) q = q.limit(10);
    }
    if (req.filter) q = q.where(req.filter);
    const columns = this.columnsOf(req.columns);
    if (columns) q = q.select(columns);
    if (req.offset !== undefined && req.offset > 0) q = q.offset(req.offset);
    if (req.with_row_id) q = q.withRowId();
    if (req.fast_search) q = q.fastSearch();
    return q;
  }

  private vectorsOf(v: QueryRequest['vector']): number[][] {
    if (!v) return [];
    if (Array.isArray(v)) {
      if (v.length === 0) return [];
      if (Array.isArray(v[0])) return (v as number[][]).filter((x) => x.length > 0);
      return [v as number[]];
    }
    if (v.single_vector && v.single_vector.length > 0) return [v.single_vector];
    if (v.multi_vector && v.multi_vector.length > 0) return v.multi_vector.filter((x) => x.length > 0);
    return [];
  }

  private columnsOf(c: QueryRequest['columns']): string[] | Record<string, string> | undefined {
    if (!c) return undefined;
    if (Array.isArray(c)) return c.length > 0 ? c : undefined;
    const o = c as Record<string, unknown>;
    if ('column_names' in o || 'column_aliases' in o) {
      if (Array.isArray(o.column_names) && o.column_names.length > 0) return o.column_names as string[];
      if (o.column_aliases && typeof o.column_aliases === 'object') return o.column_aliases as Record<string, string>;
      return undefined;
    }
    return Object.keys(o).length > 0 ? (o as Record<string, string>) : undefined;
  }

  /** Legacy `{columns, query: "text"}`, structured `{query: FtsQuery}`, spec `{string_query}` / `{structured_query}`. */
  private ftsOf(f: Record<string, unknown> | null | undefined): { query: string | lancedb.FullTextQuery; columns?: string[] } | undefined {
    if (!f) return undefined;
    const sq = (f.string_query ?? undefined) as { query?: unknown; columns?: unknown } | undefined;
    if (sq && typeof sq === 'object') {
      if (typeof sq.query !== 'string') throw Errors.invalidInput('full_text_query.string_query.query must be a string');
      return { query: sq.query, columns: Array.isArray(sq.columns) && sq.columns.length ? (sq.columns as string[]) : undefined };
    }
    const structured = (f.structured_query as { query?: unknown } | undefined)?.query ?? (typeof f.query === 'object' ? f.query : undefined);
    if (structured && typeof structured === 'object') {
      const match = (structured as Record<string, any>).match;
      // A match without a column (the client's plain `search('text')`) searches every indexed column, as in-process.
      if (match && typeof match === 'object' && !match.column) {
        const columns = Array.isArray(f.columns) && f.columns.length ? (f.columns as string[]) : undefined;
        return { query: String(match.terms ?? match.query ?? ''), columns };
      }
      return { query: this.ftsQuery(structured as Record<string, any>) };
    }
    if (typeof f.query === 'string') {
      return { query: f.query, columns: Array.isArray(f.columns) && f.columns.length ? (f.columns as string[]) : undefined };
    }
    throw Errors.invalidInput('unsupported full_text_query');
  }

  private ftsQuery(q: Record<string, any>): lancedb.FullTextQuery {
    const op = (o: unknown) => (String(o ?? 'Or').toLowerCase() === 'and' ? lancedb.Operator.And : lancedb.Operator.Or);
    if (q.match) {
      const m = q.match;
      return new lancedb.MatchQuery(String(m.terms ?? m.query ?? ''), String(m.column ?? ''), {
        boost: m.boost ?? undefined,
        fuzziness: m.fuzziness ?? undefined,
        maxExpansions: m.max_expansions ?? undefined,
        operator: op(m.operator),
        prefixLength: m.prefix_length ?? undefined,
      });
    }
    if (q.phrase) return new lancedb.PhraseQuery(String(q.phrase.terms ?? q.phrase.query ?? ''), String(q.phrase.column ?? ''), { slop: q.phrase.slop ?? undefined });
    if (q.boost) {
      return new lancedb.BoostQuery(this.ftsQuery(q.boost.positive), this.ftsQuery(q.boost.negative), {
        negativeBoost: q.boost.negative_boost ?? undefined,
      });
    }
    if (q.multi_match) {
      const list: Array<Record<string, any>> = q.multi_match.match_queries ?? [];
      if (list.length === 0) throw Errors.invalidInput('multi_match needs match_queries');
      return new lancedb.MultiMatchQuery(
        String(list[0].terms ?? ''),
        list.map((m) => String(m.column)),
        { boosts: list.map((m) => m.boost ?? 1), operator: op(list[0].operator) },
      );
    }
    if (q.boolean) {
      const parts: [lancedb.Occur, lancedb.FullTextQuery][] = [];
      for (const [key, occur] of [
        ['should', lancedb.Occur.Should],
        ['must', lancedb.Occur.Must],
        ['must_not', lancedb.Occur.MustNot],
      ] as const) {
        for (const sub of (q.boolean[key] ?? []) as Record<string, any>[]) parts.push([occur, this.ftsQuery(sub)]);
      }
      return new lancedb.BooleanQuery(parts);
    }
    throw Errors.invalidInput(`unsupported full-text query ${JSON.stringify(Object.keys(q))}`);
  }

  // ---------------------------------------------------------------- mutations

  async update(t: TenantContext, id: string[], updates: string[][], predicate?: string) {
    const seen = new Set<string>();
    const pairs = updates.map((u, i): [string, string] => {
      if (u.length !== 2) throw Errors.invalidInput(`updates[${i}] must be a [column, expression] pair, got ${u.length} elements`);
      if (!u[0]) throw Errors.invalidInput(`updates[${i}] has an empty column name`);
      if (seen.has(u[0])) throw Errors.invalidInput(`cannot update column '${u[0]}' more than once`);
      seen.add(u[0]);
      return [u[0], u[1]];
    });
    const row = await this.written(t, id);
    return this.engine.withNative(row.location, async (n) => {
      const r = await n.update(predicate?.trim() ? predicate : undefined, pairs);
      return { rows_updated: r.rowsUpdated, updated_rows: r.rowsUpdated, version: r.version };
    });
  }

  async delete(t: TenantContext, id: string[], predicate: string) {
    if (!predicate.trim()) throw Errors.invalidInput('delete requires a non-empty predicate');
    const row = await this.written(t, id);
    return this.engine.withNative(row.location, async (n) => {
      const r = await n.delete(predicate);
      return { num_deleted_rows: r.numDeletedRows, version: r.version };
    });
  }

  // ---------------------------------------------------------------- indices

  async createIndex(t: TenantContext, id: string[], req: CreateIndexRequest) {
    const type = req.index_type.trim().toUpperCase();
    const dt = distance(req.metric_type ?? req.distance_type);
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
          language: req.language,
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
      await table.createIndex(req.column, { config, ...(req.name ? { name: req.name } : {}), replace: req.replace ?? true });
    });
    return {};
  }

  async listIndices(t: TenantContext, id: string[], version?: number) {
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

  async indexStats(t: TenantContext, id: string[], name: string, version?: number) {
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

  async dropIndex(t: TenantContext, id: string[], name: string) {
    const row = await this.written(t, id);
    await this.engine.withTable(row.location, async (table) => {
      if (!(await table.listIndices()).some((i) => i.name === name)) throw Errors.indexNotFound(`index '${name}' not found`);
      await table.dropIndex(name);
    });
    return {};
  }

  // ---------------------------------------------------------------- versions and schema evolution

  async listVersions(t: TenantContext, id: string[]) {
    const row = await this.written(t, id);
    return this.engine.withTable(row.location, async (table) => ({
      versions: (await table.listVersions()).map((v) => ({
        version: v.version,
        timestamp: v.timestamp.toISOString(),
        metadata: v.metadata ?? {},
      })),
    }));
  }

  async restore(t: TenantContext, id: string[], version: number | undefined) {
    if (version === undefined) throw Errors.invalidInput('restore requires a version');
    const row = await this.written(t, id);
    return this.engine.withTable(
      row.location,
      async (table) => {
        await table.restore();
        return { version: await table.version() };
      },
      version,
    );
  }

  async addColumns(t: TenantContext, id: string[], columns: Array<{ name: string; expression: string }>) {
    const row = await this.written(t, id);
    return this.engine.withTable(row.location, async (table) => {
      const r = await table.addColumns(columns.map((c) => ({ name: c.name, valueSql: c.expression })));
      return { version: r.version };
    });
  }

  async alterColumns(
    t: TenantContext,
    id: string[],
    alterations: Array<{ path: string; rename?: string; nullable?: boolean; data_type?: { type: string } | null }>,
  ) {
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
    return this.engine.withTable(row.location, async (table) => ({ version: (await table.alterColumns(mapped)).version }));
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

  async dropColumns(t: TenantContext, id: string[], columns: string[]) {
    const row = await this.written(t, id);
    return this.engine.withTable(row.location, async (table) => ({ version: (await table.dropColumns(columns)).version }));
  }
}
