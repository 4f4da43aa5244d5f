import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { z } from 'zod';
import { ApiError } from '../../src/platform/http/errors';
import { encodePageToken, isString, pageLimit, paginate } from '../../src/platform/http/pagination';
import {
  flag,
  isUuid,
  limit,
  mode,
  PageQuery,
  queryInt,
  queryJsonStringMap,
  queryList,
  queryText,
} from '../../src/platform/http/validation/fields';
import { requestPartsOf } from '../../src/platform/http/validation/request-parts';
import { ValidBody, ValidQuery, ZodValidationPipe } from '../../src/platform/http/validation/zod-validation.pipe';

/** The one validation pipe and the shared field rules: what passes, what it becomes, and the 400 for the rest. */

/** Asserts `fn` throws the InvalidInput problem (400, code 13) with a detail matching `detail`. */
function invalid(fn: () => unknown, detail: RegExp | string): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof ApiError, `an ApiError, got ${String(e)}`);
    assert.equal(e.status, 400);
    assert.equal(e.code, 13);
    if (typeof detail === 'string') assert.equal(e.message, detail);
    else assert.match(e.message, detail);
    return true;
  });
}

/** A field read as a member of an object, as the pipe reads it (so an absent value meets `.optional()`/`.default()`). */
const parse = (schema: z.ZodType, value: unknown): unknown => (z.object({ v: schema }).parse({ v: value }) as { v?: unknown }).v;
const query = <S extends z.ZodObject>(schema: S, value: Record<string, unknown>) => new ZodValidationPipe(schema, 'query').transform(value);

describe('ZodValidationPipe', () => {
  const Body = z.object({ name: z.string({ error: 'name is required' }), n: z.number().optional() }).loose();
  const Optional = z.object({ n: z.number().optional() });

  test('an absent, empty or null body reads as {}', () => {
    const pipe = new ZodValidationPipe(Optional, 'body');
    for (const v of [undefined, null, '']) assert.deepEqual(pipe.transform(v), {});
  });

  test('a body that is not a JSON object is refused before the schema sees it', () => {
    const pipe = new ZodValidationPipe(Optional, 'body');
    for (const v of [[1, 2], 'text', 42, true]) invalid(() => pipe.transform(v), 'request body must be a JSON object');
  });

  test('every issue is listed as `path: message`, joined by "; "', () => {
    const pipe = new ZodValidationPipe(Body, 'body');
    invalid(() => pipe.transform({}), 'name: name is required');
    invalid(() => pipe.transform({ name: 1, n: 'x' }), /^name: name is required; n: .+/);
  });

  test('unknown fields are kept by loose schemas and the typed result is handed on', () => {
    assert.deepEqual(new ZodValidationPipe(Body, 'body').transform({ name: 'a', extra: true }), { name: 'a', extra: true });
  });

  test('query strings are coerced by the same schemas', () => {
    const Q = z.object({ include_declared: flag(true), limit });
    assert.deepEqual(query(Q, { include_declared: 'false', limit: '5' }), { include_declared: false, limit: 5 });
    assert.deepEqual(query(Q, {}), { include_declared: true });
    invalid(() => query(Q, { include_declared: 'maybe' }), "include_declared: must be true or false, got 'maybe'");
  });

  test('@ValidBody and @ValidQuery record their schemas on the handler, for the OpenAPI document', () => {
    const B = z.object({ a: z.string() });
    class C {
      handler(_b: unknown, _q: unknown) {
        return undefined;
      }
    }
    ValidBody(B)(C.prototype, 'handler', 0);
    ValidQuery(PageQuery)(C.prototype, 'handler', 1);
    const parts = requestPartsOf(C.prototype.handler);
    assert.equal(parts.body, B);
    assert.equal(parts.query, PageQuery);
  });
});

describe('the boolean rule', () => {
  test('true/false in any case and 1/0; the last of repeated values; absent → the default', () => {
    const f = flag(false);
    for (const v of ['true', 'True', 'TRUE', '1', true]) assert.equal(parse(f, v), true, String(v));
    for (const v of ['false', 'False', '0', false]) assert.equal(parse(f, v), false, String(v));
    assert.equal(parse(f, ['true', 'false']), false);
    for (const v of [undefined, null, '']) assert.equal(parse(f, v), false);
    assert.equal(parse(flag(true), undefined), true);
    assert.equal(parse(flag(), undefined), undefined, 'no default: absent stays absent (a body field may decide)');
  });

  test('anything else is invalid', () => {
    for (const v of ['yes', 'no', '2', 'on']) {
      assert.equal(flag().safeParse(v).success, false, v);
    }
    invalid(() => query(z.object({ use_index: flag(true) }), { use_index: 'yes' }), "use_index: must be true or false, got 'yes'");
  });
});

describe('the mode rule', () => {
  const m = mode(['Create', 'ExistOk', 'Overwrite'], 'Create');

  test('case-insensitive, PascalCase or snake_case, handed on squashed', () => {
    for (const v of ['ExistOk', 'exist_ok', 'EXISTOK', 'existok', 'Exist_Ok']) assert.equal(parse(m, v), 'existok', v);
    assert.equal(parse(m, 'OVERWRITE'), 'overwrite');
    assert.equal(parse(mode(['create', 'exist_ok'], 'create'), 'ExistOk'), 'existok', 'spelled either way in the list too');
  });

  test('absent or null → the default', () => {
    assert.equal(parse(m, undefined), 'create');
    assert.equal(parse(m, null), 'create');
  });

  test('an unknown value names the accepted ones', () => {
    invalid(
      () => new ZodValidationPipe(z.object({ mode: m }), 'body').transform({ mode: 'Replace' }),
      "mode: unsupported value 'Replace'; expected one of Create, ExistOk, Overwrite",
    );
  });
});

describe('the limit rule and page tokens', () => {
  const bounds = { listDefaultLimit: 100, listMaxLimit: 1000 };

  test('an integer; absent, empty or negative → the default; above the maximum → the maximum', () => {
    assert.equal(parse(limit, '10'), 10);
    assert.equal(parse(limit, 7), 7);
    assert.equal(parse(limit, ['3', '4']), 4);
    for (const v of [undefined, '', '-1', -5]) assert.equal(parse(limit, v), undefined, String(v));
    assert.equal(pageLimit(undefined, bounds), 100);
    assert.equal(pageLimit(0, bounds), 0);
    assert.equal(pageLimit(5000, bounds), 1000);
  });

  test('a limit that is not an integer is invalid', () => {
    for (const v of ['abc', '1.5']) invalid(() => query(PageQuery, { limit: v }), `limit: must be an integer, got '${v}'`);
  });

  test('the page token is the last of repeated values; empty means the first page', () => {
    assert.deepEqual(query(PageQuery, { page_token: ['a', 'b'] }), { page_token: 'b' });
    assert.deepEqual(query(PageQuery, { page_token: '' }), { page_token: undefined });
  });

  test('paginate answers rows and a token for the next page, which resumes after the last row', async () => {
    const names = ['a', 'b', 'c', 'd', 'e'];
    const source = {
      isKey: isString,
      fetch: async (after: string | undefined, take: number) => names.filter((n) => after === undefined || n > after).slice(0, take),
      keyOf: (n: string) => n,
    };
    const first = await paginate({ limit: 2 }, bounds, source);
    assert.deepEqual(first.rows, ['a', 'b']);
    assert.ok(first.page_token);
    const second = await paginate({ limit: 10, page_token: first.page_token }, bounds, source);
    assert.deepEqual(second, { rows: ['c', 'd', 'e'] }, 'the last page has no token');
    await assert.rejects(
      paginate({ page_token: encodePageToken(42) }, bounds, source),
      (e: unknown) => e instanceof ApiError && e.code === 13,
    );
  });
});

describe('other query rules', () => {
  test('integers (a table version)', () => {
    assert.equal(parse(queryInt(), '3'), 3);
    assert.equal(parse(queryInt(), undefined), undefined);
    assert.equal(queryInt().safeParse('three').success, false);
    assert.equal(queryInt().safeParse('-1').success, false, 'a version is never negative');
  });

  test('text: the last value, empty = absent', () => {
    assert.equal(parse(queryText(), ['a', 'b']), 'b');
    assert.equal(parse(queryText(), ''), undefined);
  });

  test('repeatable lists keep every non-empty value and need one', () => {
    const on = queryList("merge_insert requires the 'on' query parameter");
    assert.deepEqual(parse(on, ['a', 'b']), ['a', 'b']);
    assert.deepEqual(parse(on, 'a'), ['a']);
    invalid(() => query(z.object({ on }), { on: '' }), "on: merge_insert requires the 'on' query parameter");
  });

  test('a JSON-encoded map of strings', () => {
    const props = queryJsonStringMap();
    assert.deepEqual(parse(props, '{"a":"1"}'), { a: '1' });
    assert.equal(parse(props, undefined), undefined);
    for (const v of ['{"a":1}', '[]', 'not json']) {
      invalid(() => query(z.object({ properties: props }), { properties: v }), 'properties: must be a JSON object of strings');
    }
  });
});

describe('the id rule', () => {
  test('ids the gateway makes are UUIDs; anything else names nothing', () => {
    assert.equal(isUuid('00000000-0000-4000-8000-000000000000'), true);
    assert.equal(isUuid('0F4C3B1E-9A2D-4C5B-8E7F-123456789ABC'), true);
    for (const v of ['', 'x', '00000000-0000-4000-8000-00000000000', '------------------------------------', 42, null]) {
      assert.equal(isUuid(v), false, String(v));
    }
  });
});
