import * as lancedb from '@lancedb/lancedb';
import { Errors } from '../../platform/http/errors';

// A query as plain data (QueryPlan): what the engine is asked to run. modules/data/reads/query-plan.ts builds it
// from a request; toEngineQuery turns it into engine calls.

export type Distance = 'l2' | 'cosine' | 'dot' | 'hamming';

/** A full-text query tree, as plain data (the engine's classes are built from it by the executor). */
export type FtsNode =
  | {
      kind: 'match';
      terms: string;
      column: string;
      boost?: number;
      fuzziness?: number;
      maxExpansions?: number;
      operator: 'and' | 'or';
      prefixLength?: number;
    }
  | { kind: 'phrase'; terms: string; column: string; slop?: number }
  | { kind: 'boost'; positive: FtsNode; negative: FtsNode; negativeBoost?: number }
  | { kind: 'multi_match'; terms: string; columns: string[]; boosts: number[]; operator: 'and' | 'or' }
  | { kind: 'boolean'; clauses: Array<{ occur: 'should' | 'must' | 'must_not'; query: FtsNode }> };

export interface FtsPlan {
  /** Plain text searches every indexed column (or `columns`); a node is a structured query. */
  query: string | FtsNode;
  columns?: string[];
}

export interface VectorPlan {
  vectors: number[][];
  column?: string;
  distance?: Distance;
  /** Exactly the nprobes calls to make, in this order of precedence. */
  minimumNprobes?: number;
  maximumNprobes?: number;
  nprobes?: number;
  ef?: number;
  refineFactor?: number;
  distanceRange?: { lower?: number; upper?: number };
  bypassVectorIndex: boolean;
  postfilter: boolean;
}

export interface QueryPlan {
  vector?: VectorPlan;
  fts?: FtsPlan;
  /** A number of rows, 'all' (every row: a vector search then needs the table's row count), or none. */
  limit?: number | 'all';
  filter?: string;
  select?: string[] | Record<string, string>;
  offset?: number;
  withRowId: boolean;
  fastSearch: boolean;
}

/** A distance type from any of its spellings (queries and index definitions use the same names). */
export function distanceOf(v: string | null | undefined): Distance | undefined {
  if (!v) return undefined;
  const d = v.toLowerCase();
  if (d === 'l2' || d === 'euclidean') return 'l2';
  if (d === 'cosine') return 'cosine';
  if (d === 'dot' || d === 'inner_product') return 'dot';
  if (d === 'hamming') return 'hamming';
  throw Errors.invalidInput(`unsupported distance type '${v}'`);
}

/**
 * A QueryPlan as engine calls. Every rule (defaults, spellings, precedence) was decided by planQuery; this only
 * translates, so it stays a straight line a reader can check against the engine's API.
 */
export async function toEngineQuery(table: lancedb.Table, plan: QueryPlan): Promise<lancedb.Query | lancedb.VectorQuery> {
  let q: lancedb.Query | lancedb.VectorQuery;
  const fts = plan.fts
    ? { query: typeof plan.fts.query === 'string' ? plan.fts.query : ftsQuery(plan.fts.query), columns: plan.fts.columns }
    : undefined;
  if (plan.vector) {
    const v = plan.vector;
    let vq = table.query().nearestTo(v.vectors[0]);
    for (const extra of v.vectors.slice(1)) vq = vq.addQueryVector(extra);
    if (v.column) vq = vq.column(v.column);
    if (v.distance) vq = vq.distanceType(v.distance as 'l2' | 'cosine' | 'dot');
    // Each bound is checked against the other's current value (both 20 by default), so the upper one is lifted first
    // (0: none) and any minimum the plan accepted can be set: below its maximum, or with none (maximum_nprobes 0).
    if (v.minimumNprobes !== undefined) vq = vq.maximumNprobes(0);
    if (v.minimumNprobes !== undefined) vq = vq.minimumNprobes(v.minimumNprobes);
    if (v.maximumNprobes !== undefined) vq = vq.maximumNprobes(v.maximumNprobes);
    if (v.nprobes !== undefined) vq = vq.nprobes(v.nprobes);
    if (v.ef !== undefined) vq = vq.ef(v.ef);
    if (v.refineFactor !== undefined) vq = vq.refineFactor(v.refineFactor);
    if (v.distanceRange) vq = vq.distanceRange(v.distanceRange.lower, v.distanceRange.upper);
    if (v.bypassVectorIndex) vq = vq.bypassVectorIndex();
    if (v.postfilter) vq = vq.postfilter();
    if (plan.limit !== undefined) vq = vq.limit(plan.limit === 'all' ? Math.max(await table.countRows(), 1) : plan.limit);
    if (fts) vq = vq.fullTextSearch(fts.query, fts.columns ? { columns: fts.columns } : undefined);
    q = vq;
  } else {
    q = table.query();
    if (fts) q = q.fullTextSearch(fts.query, fts.columns ? { columns: fts.columns } : undefined);
    if (typeof plan.limit === 'number') q = q.limit(plan.limit);
  }
  if (plan.filter) q = q.where(plan.filter);
  if (plan.select) q = q.select(plan.select);
  if (plan.offset !== undefined) q = q.offset(plan.offset);
  if (plan.withRowId) q = q.withRowId();
  if (plan.fastSearch) q = q.fastSearch();
  return q;
}

const OCCUR = { should: lancedb.Occur.Should, must: lancedb.Occur.Must, must_not: lancedb.Occur.MustNot } as const;
const operator = (o: 'and' | 'or') => (o === 'and' ? lancedb.Operator.And : lancedb.Operator.Or);

function ftsQuery(n: FtsNode): lancedb.FullTextQuery {
  switch (n.kind) {
    case 'match':
      return new lancedb.MatchQuery(n.terms, n.column, {
        boost: n.boost,
        fuzziness: n.fuzziness,
        maxExpansions: n.maxExpansions,
        operator: operator(n.operator),
        prefixLength: n.prefixLength,
      });
    case 'phrase':
      return new lancedb.PhraseQuery(n.terms, n.column, { slop: n.slop });
    case 'boost':
      return new lancedb.BoostQuery(ftsQuery(n.positive), ftsQuery(n.negative), { negativeBoost: n.negativeBoost });
    case 'multi_match':
      return new lancedb.MultiMatchQuery(n.terms, n.columns, { boosts: n.boosts, operator: operator(n.operator) });
    case 'boolean':
      return new lancedb.BooleanQuery(n.clauses.map((c) => [OCCUR[c.occur], ftsQuery(c.query)] as [lancedb.Occur, lancedb.FullTextQuery]));
  }
}
