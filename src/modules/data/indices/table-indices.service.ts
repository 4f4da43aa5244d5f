import { Injectable } from '@nestjs/common';
import * as lancedb from '@lancedb/lancedb';
import { Errors } from '../../../platform/http/errors';
import type { EmptyResponse } from '../dataplane.schemas';
import { TenantContext } from '../../identity';
import type { CreateIndexRequest, DescribeTableIndexStatsResponse, ListTableIndicesResponse } from './table-indices.schemas';
import { LanceEngine } from '../../../engine/lance/lance-engine';
import { distanceOf } from '../../../engine/lance/query-executor';
import { DataTables } from '../data-tables.service';

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
  'Arabic',
  'Danish',
  'Dutch',
  'English',
  'Finnish',
  'French',
  'German',
  'Greek',
  'Hungarian',
  'Italian',
  'Norwegian',
  'Portuguese',
  'Romanian',
  'Russian',
  'Spanish',
  'Swedish',
  'Tamil',
  'Turkish',
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
  for (const [name, v] of [
    ['num_partitions', req.num_partitions],
    ['max_iterations', req.max_iterations],
    ['sample_rate', req.sample_rate],
  ] as const) {
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

/** Indices: create (parameters the engine cannot take are refused first), list, stats and drop. */
@Injectable()
export class TableIndicesService {
  constructor(
    private readonly engine: LanceEngine,
    private readonly data: DataTables,
  ) {}

  // ---------------------------------------------------------------- indices

  /** CreateTableScalarIndex: CreateTableIndex for scalar (and FTS) index types only; a vector type is a 400. */
  async createScalarIndex(t: TenantContext, id: string[], req: CreateIndexRequest): Promise<EmptyResponse> {
    const type = req.index_type.trim().toUpperCase();
    if (VECTOR_INDEX_TYPES.has(type)) {
      throw Errors.invalidInput(
        `create_scalar_index builds scalar indexes only; '${req.index_type}' is a vector index type (use create_index)`,
      );
    }
    return this.createIndex(t, id, req);
  }

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
          baseTokenizer: req.base_tokenizer as NonNullable<Parameters<typeof lancedb.Index.fts>[0]>['baseTokenizer'],
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
    const row = await this.data.written(t, id);
    await this.engine.withTable(
      row.location,
      async (table) => {
        const schema = await table.schema();
        if (!schema.fields.some((f) => f.name === req.column.split('.')[0]))
          throw Errors.columnNotFound(`column '${req.column}' not found`);
        if (req.num_partitions !== undefined && VECTOR_INDEX_TYPES.has(type)) {
          // KMeans cannot train more centroids than there are rows; say so before the engine spends any work on it.
          const rows = await table.countRows();
          if (req.num_partitions > rows) {
            throw Errors.invalidInput(`num_partitions (${req.num_partitions}) must not exceed the number of rows (${rows})`);
          }
        }
        await this.data.commit(
          () => table.createIndex(req.column, { config, ...(req.name ? { name: req.name } : {}), replace: req.replace ?? true }),
          () => ({}),
        );
      },
      { branch: req.branch },
    );
    return {};
  }

  async listIndices(t: TenantContext, id: string[], version?: number, branch?: string): Promise<ListTableIndicesResponse> {
    const row = await this.data.written(t, id);
    return this.engine.read(
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
      { version, branch },
    );
  }

  async indexStats(
    t: TenantContext,
    id: string[],
    name: string,
    version?: number,
    branch?: string,
  ): Promise<DescribeTableIndexStatsResponse> {
    const row = await this.data.written(t, id);
    return this.engine.read(
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
      { version, branch },
    );
  }

  async dropIndex(t: TenantContext, id: string[], name: string, branch?: string): Promise<EmptyResponse> {
    const row = await this.data.written(t, id);
    await this.engine.withTable(
      row.location,
      async (table) => {
        if (!(await table.listIndices()).some((i) => i.name === name)) throw Errors.indexNotFound(`index '${name}' not found`);
        await this.data.commit(
          () => table.dropIndex(name),
          () => ({ name }),
        );
      },
      { branch },
    );
    return {};
  }
}
