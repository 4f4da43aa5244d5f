import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ApiError } from '../../src/platform/http/errors';
import { decodePageToken, encodePageToken, isStringPair } from '../../src/platform/http/pagination';

/** Page tokens: opaque, round-trip, and anything not issued by the server is a 400 (never a 500). */
describe('page tokens', () => {
  test('round trip', () => {
    const t = encodePageToken(['ns', 'table']);
    assert.doesNotMatch(t, /[+/=]/, 'base64url: safe in a query string');
    assert.deepEqual(decodePageToken(t, isStringPair), ['ns', 'table']);
  });

  test('absent tokens mean the first page', () => {
    for (const v of [undefined, null, '']) assert.equal(decodePageToken(v, isStringPair), undefined);
  });

  test('foreign or malformed tokens are invalid input', () => {
    for (const v of ['not-base64!', encodePageToken({ a: 1 }), encodePageToken(['only-one']), 42]) {
      assert.throws(
        () => decodePageToken(v, isStringPair),
        (e: unknown) => e instanceof ApiError && e.status === 400 && e.code === 13,
      );
    }
  });
});
