import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ApiError } from '../../src/platform/http/errors';
import { QueryBody, QueryRequest } from '../../src/modules/data/dataplane.schemas';
import { distanceOf } from '../../src/engine/lance/query-executor';
import { columnsOf, DEFAULT_SEARCH_LIMIT, planQuery, UNLIMITED_K, vectorsOf } from '../../src/modules/data/reads/query-plan';

/** The query builder's rules, without an engine: both dialects of a request become the same plan. */
const req = (body: Record<string, unknown>): QueryRequest => QueryBody.parse(body);
const invalid = (e: unknown) => e instanceof ApiError && e.status === 400 && e.code === 13;

describe('query plan: limits', () => {
  test('a plain scan has no limit unless k is given', () => {
    assert.equal(planQuery(req({})).limit, undefined);
    assert.equal(planQuery(req({ k: 0 })).limit, undefined);
    assert.equal(planQuery(req({ k: 7 })).limit, 7);
    assert.equal(planQuery(req({ k: UNLIMITED_K })).limit, undefined, 'i64::MAX from the remote client is no limit');
  });

  test('a vector search defaults to 10 and keeps every row for an unlimited k', () => {
    assert.equal(planQuery(req({ vector: [1, 2] })).limit, DEFAULT_SEARCH_LIMIT);
    assert.equal(planQuery(req({ vector: [1, 2], k: 0 })).limit, DEFAULT_SEARCH_LIMIT);
    assert.equal(planQuery(req({ vector: [1, 2], k: 3 })).limit, 3);
    assert.equal(planQuery(req({ vector: [1, 2], k: Number.MAX_SAFE_INTEGER })).limit, 'all');
  });

  test('a full-text search without k defaults to 10', () => {
    assert.equal(planQuery(req({ full_text_query: { string_query: { query: 'x' } } })).limit, DEFAULT_SEARCH_LIMIT);
    assert.equal(planQuery(req({ full_text_query: { string_query: { query: 'x' } }, k: 4 })).limit, 4);
  });
});

describe('query plan: vectors', () => {
  test('one vector, several, and the spec forms are the same plan', () => {
    assert.deepEqual(vectorsOf([1, 2]), [[1, 2]]);
    assert.deepEqual(vectorsOf([[1, 2], [], [3, 4]]), [
      [1, 2],
      [3, 4],
    ]);
    assert.deepEqual(vectorsOf({ single_vector: [1, 2] }), [[1, 2]]);
    assert.deepEqual(vectorsOf({ multi_vector: [[1], [2]] }), [[1], [2]]);
    assert.deepEqual(vectorsOf([]), []);
    assert.equal(planQuery(req({ vector: [] })).vector, undefined, 'an empty vector is a plain scan');
  });

  test('nprobes: minimum and maximum, nprobes alone, and maximum 0 as "no upper bound"', () => {
    const v = (b: Record<string, unknown>) => planQuery(req({ vector: [1], ...b })).vector!;
    assert.deepEqual([v({ nprobes: 5 }).nprobes, v({ nprobes: 5 }).minimumNprobes], [5, undefined]);
    const both = v({ minimum_nprobes: 2, maximum_nprobes: 9 });
    assert.deepEqual([both.minimumNprobes, both.maximumNprobes, both.nprobes], [2, 9, undefined]);
    const unbounded = v({ minimum_nprobes: 3, maximum_nprobes: 0 });
    assert.deepEqual([unbounded.minimumNprobes, unbounded.maximumNprobes, unbounded.nprobes], [3, undefined, undefined]);
    assert.equal(v({ minimum_nprobes: 4, nprobes: 8 }).nprobes, 4, 'minimum_nprobes wins over the legacy nprobes');
  });

  test("the remote client's nprobes(n) (minimum = maximum = n) is nprobes(n), above the engine's default of 20 too", () => {
    const v = (b: Record<string, unknown>) => planQuery(req({ vector: [1], ...b })).vector!;
    const sent = v({ nprobes: 30, minimum_nprobes: 30, maximum_nprobes: 30 });
    assert.deepEqual([sent.nprobes, sent.minimumNprobes, sent.maximumNprobes], [30, undefined, undefined]);
    const wide = v({ minimum_nprobes: 25, maximum_nprobes: 40 });
    assert.deepEqual([wide.minimumNprobes, wide.maximumNprobes], [25, 40]);
    assert.throws(() => v({ minimum_nprobes: 9, maximum_nprobes: 3 }), invalid, 'minimum above maximum (not 0) is a 400');
  });

  test('options map one to one; prefilter false is a post-filter', () => {
    const v = planQuery(
      req({
        vector: [1],
        vector_column: 'emb',
        distance_type: 'Cosine',
        ef: 40,
        refine_factor: 2,
        lower_bound: 0.1,
        bypass_vector_index: true,
        prefilter: false,
      }),
    ).vector!;
    assert.equal(v.column, 'emb');
    assert.equal(v.distance, 'cosine');
    assert.equal(v.ef, 40);
    assert.equal(v.refineFactor, 2);
    assert.deepEqual(v.distanceRange, { lower: 0.1, upper: undefined });
    assert.equal(v.bypassVectorIndex, true);
    assert.equal(v.postfilter, true);
    assert.equal(planQuery(req({ vector: [1] })).vector!.postfilter, false);
  });

  test('distance names: both spellings, and unknown ones are 400', () => {
    assert.equal(distanceOf('euclidean'), 'l2');
    assert.equal(distanceOf('inner_product'), 'dot');
    assert.equal(distanceOf(undefined), undefined);
    assert.throws(() => distanceOf('manhattan'), invalid);
  });
});

describe('query plan: columns, filter, offset', () => {
  test('names, the spec objects and the alias map', () => {
    assert.deepEqual(columnsOf(['a', 'b']), ['a', 'b']);
    assert.equal(columnsOf([]), undefined);
    assert.deepEqual(columnsOf({ column_names: ['a'] } as never), ['a']);
    assert.deepEqual(columnsOf({ column_aliases: { x: 'a + 1' } } as never), { x: 'a + 1' });
    assert.deepEqual(columnsOf({ x: 'a' } as never), { x: 'a' });
  });

  test('filter, offset and flags pass through; offset 0 is none', () => {
    const p = planQuery(req({ filter: 'id > 3', offset: 0, with_row_id: true, fast_search: true }));
    assert.equal(p.filter, 'id > 3');
    assert.equal(p.offset, undefined);
    assert.equal(p.withRowId, true);
    assert.equal(p.fastSearch, true);
    assert.equal(planQuery(req({ offset: 5 })).offset, 5);
  });
});

describe('query plan: full-text', () => {
  test('legacy text, spec string query and a column-less match search as plain text', () => {
    assert.deepEqual(planQuery(req({ full_text_query: { query: 'hello', columns: ['t'] } })).fts, { query: 'hello', columns: ['t'] });
    assert.deepEqual(planQuery(req({ full_text_query: { string_query: { query: 'hi' } } })).fts, { query: 'hi', columns: undefined });
    assert.deepEqual(planQuery(req({ full_text_query: { query: { match: { terms: 'x' } } } })).fts, { query: 'x', columns: undefined });
  });

  test('structured queries become a tree', () => {
    const fts = planQuery(
      req({
        full_text_query: {
          structured_query: {
            query: {
              boolean: {
                must: [{ match: { terms: 'a', column: 't', operator: 'And' } }],
                must_not: [{ phrase: { terms: 'b c', column: 't', slop: 1 } }],
              },
            },
          },
        },
      }),
    ).fts!;
    assert.deepEqual(fts.query, {
      kind: 'boolean',
      clauses: [
        {
          occur: 'must',
          query: {
            kind: 'match',
            terms: 'a',
            column: 't',
            boost: undefined,
            fuzziness: undefined,
            maxExpansions: undefined,
            operator: 'and',
            prefixLength: undefined,
          },
        },
        { occur: 'must_not', query: { kind: 'phrase', terms: 'b c', column: 't', slop: 1 } },
      ],
    });
  });

  test('unknown, malformed and runaway queries are 400, never an engine call', () => {
    assert.throws(() => planQuery(req({ full_text_query: { string_query: { query: 5 } } })), invalid);
    assert.throws(() => planQuery(req({ full_text_query: { query: { wildcard: {} } } })), invalid);
    assert.throws(() => planQuery(req({ full_text_query: { query: { multi_match: { match_queries: [] } } } })), invalid);
    assert.throws(() => planQuery(req({ full_text_query: { flavour: 1 } })), invalid);
    let deep: Record<string, unknown> = { match: { terms: 'x', column: 't' } };
    for (let i = 0; i < 100; i++) deep = { boost: { positive: deep, negative: { match: { terms: 'y', column: 't' } } } };
    assert.throws(() => planQuery(req({ full_text_query: { query: deep } })), invalid);
  });
});
