import { Errors } from '../../../platform/http/errors';
import type { QueryRequest } from '../dataplane.schemas';
import { distanceOf, FtsNode, FtsPlan, QueryPlan, VectorPlan } from '../../../engine/lance/query-executor';

/**
 * The query builder, as pure functions: both dialects of a query request (the remote client's and the Lance spec's)
 * become one plain QueryPlan, with every rule about defaults and spellings decided here, where a unit test can see
 * it. Turning the plan into engine calls (engine/lance/query-executor.ts) then makes no decisions of its own.
 */

/** `k` at or above this means "no limit" (the remote client sends i64::MAX). */
export const UNLIMITED_K = 2 ** 31;
/** The limit of a vector or full-text search that names none, as in-process LanceDB. */
export const DEFAULT_SEARCH_LIMIT = 10;

export function planQuery(req: QueryRequest): QueryPlan {
  const vectors = vectorsOf(req.vector);
  const fts = ftsOf(req.full_text_query);
  const k = req.k ?? undefined;
  const unlimited = k !== undefined && k >= UNLIMITED_K;
  const plan: QueryPlan = { withRowId: !!req.with_row_id, fastSearch: !!req.fast_search };
  if (fts) plan.fts = fts;

  if (vectors.length > 0) {
    const v: VectorPlan = { vectors, bypassVectorIndex: !!req.bypass_vector_index, postfilter: req.prefilter === false };
    if (req.vector_column) v.column = req.vector_column;
    const dt = distanceOf(req.distance_type);
    if (dt) v.distance = dt;
    const min = req.minimum_nprobes ?? req.nprobes ?? undefined;
    const max = req.maximum_nprobes ?? undefined;
    if (max !== undefined && max > 0) {
      // The official remote client sends nprobes(n) as minimum = maximum = n (and nprobes = n): that is nprobes(n),
      // as a namespace-mode client calls it (the engine's bounds cannot be set one at a time past its default of 20).
      if (min !== undefined && min > max) {
        throw Errors.invalidInput(`minimum_nprobes (${min}) must be less than or equal to maximum_nprobes (${max})`);
      }
      if (min === max) v.nprobes = min;
      else {
        if (min !== undefined) v.minimumNprobes = min;
        v.maximumNprobes = max;
      }
    } else if (min !== undefined) {
      // maximum_nprobes 0 means "no upper bound": only the minimum is set; otherwise nprobes sets both.
      if (max === 0) v.minimumNprobes = min;
      else v.nprobes = min;
    }
    if (req.ef != null) v.ef = req.ef;
    if (req.refine_factor != null) v.refineFactor = req.refine_factor;
    if (req.lower_bound != null || req.upper_bound != null) {
      v.distanceRange = { lower: req.lower_bound ?? undefined, upper: req.upper_bound ?? undefined };
    }
    plan.vector = v;
    plan.limit = k === undefined || k === 0 ? DEFAULT_SEARCH_LIMIT : unlimited ? 'all' : k;
  } else if (k !== undefined && k > 0 && !unlimited) {
    plan.limit = k;
  } else if (fts && k === undefined) {
    plan.limit = DEFAULT_SEARCH_LIMIT;
  }

  if (req.filter) plan.filter = req.filter;
  const select = columnsOf(req.columns);
  if (select) plan.select = select;
  if (req.offset != null && req.offset > 0) plan.offset = req.offset;
  return plan;
}

/** A single vector, several (multi-vector search), or the spec's `{single_vector}` / `{multi_vector}`. */
export function vectorsOf(v: QueryRequest['vector']): number[][] {
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

/** A list of names, the spec's `{column_names}` / `{column_aliases}`, or the remote client's alias map. */
export function columnsOf(c: QueryRequest['columns']): string[] | Record<string, string> | undefined {
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

const columnList = (c: unknown): string[] | undefined => (Array.isArray(c) && c.length ? (c as string[]) : undefined);

/** Legacy `{columns, query: "text"}`, structured `{query: FtsQuery}`, spec `{string_query}` / `{structured_query}`. */
export function ftsOf(f: Record<string, unknown> | null | undefined): FtsPlan | undefined {
  if (!f) return undefined;
  const sq = (f.string_query ?? undefined) as { query?: unknown; columns?: unknown } | undefined;
  if (sq && typeof sq === 'object') {
    if (typeof sq.query !== 'string') throw Errors.invalidInput('full_text_query.string_query.query must be a string');
    return { query: sq.query, columns: columnList(sq.columns) };
  }
  const structured = (f.structured_query as { query?: unknown } | undefined)?.query ?? (typeof f.query === 'object' ? f.query : undefined);
  if (structured && typeof structured === 'object') {
    const match = (structured as FtsJson).match;
    // A match without a column (the client's plain `search('text')`) searches every indexed column, as in-process.
    if (match && typeof match === 'object' && !match.column) {
      return { query: String(match.terms ?? match.query ?? ''), columns: columnList(f.columns) };
    }
    return { query: ftsNode(structured as FtsJson) };
  }
  if (typeof f.query === 'string') return { query: f.query, columns: columnList(f.columns) };
  throw Errors.invalidInput('unsupported full_text_query');
}

/** The remote client's FtsQuery JSON: any shape arrives; each field is checked as it is read. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type FtsJson = Record<string, any>;
const operatorOf = (o: unknown): 'and' | 'or' => (String(o ?? 'Or').toLowerCase() === 'and' ? 'and' : 'or');
const opt = (v: unknown): number | undefined => (v === null || v === undefined ? undefined : (v as number));

/** A structured full-text query (the remote client's FtsQuery JSON) as a plain tree; unknown shapes are 400. */
export function ftsNode(q: FtsJson, depth = 0): FtsNode {
  if (depth > 32) throw Errors.invalidInput('full-text query nested too deeply');
  if (!q || typeof q !== 'object') throw Errors.invalidInput('full-text query must be an object');
  if (q.match) {
    const m = q.match;
    return {
      kind: 'match',
      terms: String(m.terms ?? m.query ?? ''),
      column: String(m.column ?? ''),
      boost: opt(m.boost),
      fuzziness: opt(m.fuzziness),
      maxExpansions: opt(m.max_expansions),
      operator: operatorOf(m.operator),
      prefixLength: opt(m.prefix_length),
    };
  }
  if (q.phrase) {
    return {
      kind: 'phrase',
      terms: String(q.phrase.terms ?? q.phrase.query ?? ''),
      column: String(q.phrase.column ?? ''),
      slop: opt(q.phrase.slop),
    };
  }
  if (q.boost) {
    return {
      kind: 'boost',
      positive: ftsNode(q.boost.positive, depth + 1),
      negative: ftsNode(q.boost.negative, depth + 1),
      negativeBoost: opt(q.boost.negative_boost),
    };
  }
  if (q.multi_match) {
    const list: Array<FtsJson> = q.multi_match.match_queries ?? [];
    if (!Array.isArray(list) || list.length === 0) throw Errors.invalidInput('multi_match needs match_queries');
    return {
      kind: 'multi_match',
      terms: String(list[0].terms ?? ''),
      columns: list.map((m) => String(m.column)),
      boosts: list.map((m) => m.boost ?? 1),
      operator: operatorOf(list[0].operator),
    };
  }
  if (q.boolean) {
    const clauses: Array<{ occur: 'should' | 'must' | 'must_not'; query: FtsNode }> = [];
    for (const occur of ['should', 'must', 'must_not'] as const) {
      const subs = q.boolean[occur] ?? [];
      if (!Array.isArray(subs)) throw Errors.invalidInput(`boolean.${occur} must be a list of queries`);
      for (const sub of subs) clauses.push({ occur, query: ftsNode(sub, depth + 1) });
    }
    return { kind: 'boolean', clauses };
  }
  throw Errors.invalidInput(`unsupported full-text query ${JSON.stringify(Object.keys(q))}`);
}
