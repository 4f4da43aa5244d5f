import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { renderError } from '../../src/platform/http/http-exception.filter';
import { findUnsafeString, MAX_INPUT_DEPTH, requestInputProblem } from '../../src/platform/http/input-sanity';
import { dataExceptionMessage, sqlState } from '../../src/platform/db/prisma-errors';
import { sanitizeText, sanitizeValue } from '../../src/modules/audit/audit-sanitize';

describe('input sanity', () => {
  test('names the first NUL or unpaired surrogate by its path', () => {
    assert.equal(findUnsafeString({ properties: { p: 'a\u0000b' } }, ''), 'properties.p contains a NUL character');
    assert.equal(
      findUnsafeString(
        {
          updates: [
            ['a', 'ok'],
            ['b', '\ud800'],
          ],
        },
        '',
      ),
      'updates[1][1] contains an unpaired UTF-16 surrogate',
    );
    assert.equal(findUnsafeString({ m: { 'a b': '\udc00x' } }, ''), 'm["a b"] contains an unpaired UTF-16 surrogate');
    assert.equal(findUnsafeString({ m: { 'k\u0000': 'v' } }, ''), 'a key of m contains a NUL character');
    assert.equal(findUnsafeString('x\u0000', 'query parameter q'), 'query parameter q contains a NUL character');
  });

  test('lets well-formed text through, surrogate pairs included', () => {
    assert.equal(findUnsafeString({ a: 'emoji 😀', b: ['日本', 1, null, true], c: { d: '\ud83d\ude00' } }, ''), undefined);
    assert.equal(
      findUnsafeString(
        Array.from({ length: 100_000 }, (_, i) => i),
        '',
      ),
      undefined,
    );
  });

  test('refuses nesting deeper than the limit, without recursing itself', () => {
    let v: unknown = 'leaf';
    for (let i = 0; i < 100_000; i++) v = [v];
    assert.match(findUnsafeString(v, '')!, new RegExp(`nested deeper than ${MAX_INPUT_DEPTH} levels`));
    let ok: unknown = 'leaf';
    for (let i = 0; i < MAX_INPUT_DEPTH; i++) ok = { a: ok };
    assert.equal(findUnsafeString(ok, ''), undefined);
  });

  test('checks path parameters, query string (names too) and body', () => {
    assert.match(requestInputProblem({ params: { id: 'a\u0000' } })!, /^path parameter id/);
    assert.match(requestInputProblem({ query: { 'x\u0000': '1' } })!, /query parameter name/);
    assert.match(requestInputProblem({ query: { on: ['a', 'b\ud800'] } })!, /^query parameter on\[1\]/);
    assert.equal(requestInputProblem({ params: { id: 'ns$t' }, query: { delimiter: '$' }, body: { predicate: 'id > 1' } }), undefined);
  });
});

describe('audit sanitizing', () => {
  test('escapes NUL and lone surrogates, keeps pairs, bounds length and depth', () => {
    assert.equal(sanitizeText('a\u0000b\ud800c\udfffd😀'), 'a\\u0000b\\ud800c\\udfffd😀');
    assert.equal(sanitizeText('x'.repeat(10_000)).length, 4097);
    let deep: unknown = 1;
    for (let i = 0; i < 20; i++) deep = { d: deep };
    assert.match(JSON.stringify(sanitizeValue(deep)), /nested too deeply/);
    assert.deepEqual(sanitizeValue({ 'k\u0000': ['v\u0000', Infinity, 2n, undefined] }), {
      'k\\u0000': ['v\\u0000', 'Infinity', '2', null],
    });
  });
});

describe('Postgres data exceptions', () => {
  // Error shapes as Prisma 7 with the pg and PGlite driver adapters report them (captured from real failures).
  const adapterError = (code: string, message: string) =>
    Object.assign(new Error(`Raw query failed. Code: \`${code}\`. Message: \`${message}\``), {
      name: 'PrismaClientKnownRequestError',
      code: 'P2010',
      meta: {
        driverAdapterError: { name: 'DriverAdapterError', cause: { originalCode: code, originalMessage: message, kind: 'postgres', code } },
      },
    });

  test('class 22 is a 400 with code 13; other states are not data exceptions', () => {
    const nul = adapterError('22021', 'invalid byte sequence for encoding "UTF8": 0x00');
    assert.equal(sqlState(nul), '22021');
    assert.match(dataExceptionMessage(nul)!, /NUL/);
    assert.deepEqual([renderError(nul).status, renderError(nul).code], [400, 13]);
    assert.match(dataExceptionMessage(adapterError('22P05', 'unsupported Unicode escape sequence'))!, /\\u0000/);
    assert.match(dataExceptionMessage(adapterError('22P02', 'invalid input syntax for type uuid: "zz"'))!, /22P02.*uuid/);
    assert.equal(dataExceptionMessage(adapterError('23505', 'duplicate key value')), undefined);
    assert.equal(dataExceptionMessage(new Error('plain')), undefined);
    // A raw pg error carries the SQLSTATE as `code`.
    assert.equal(sqlState(Object.assign(new Error('x'), { code: '22003' })), '22003');
  });
});
