import assert from 'node:assert/strict';

/**
 * The one check of an error answer (docs/rest-contract.md §7): the problem body with exactly these fields, the
 * integer Lance error `code` the official clients read, `instance` = the request id, and `WWW-Authenticate: Bearer`
 * on 401. Every suite uses this instead of its own copy.
 */
export const ERROR_FIELDS = ['code', 'detail', 'error', 'instance', 'status', 'title', 'type'];

export const PROBLEM_TYPE: Record<number, string> = {
  400: '/errors/bad-request',
  404: '/errors/not-found-error',
  409: '/errors/conflict',
};

export interface ErrorReply {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

export interface ProblemExpectation {
  /** The message (`error`, same as `detail`) must match this pattern, or contain this text. */
  msg?: RegExp | string;
  /** A label for assertion messages. */
  what?: string;
}

export function expectProblem(r: ErrorReply, status: number, code: number, expect: ProblemExpectation = {}): void {
  const what = expect.what ? `${expect.what}: ` : '';
  assert.equal(r.status, status, `${what}expected ${status}, got ${r.status}: ${r.text}`);
  assert.deepEqual(Object.keys(r.body ?? {}).sort(), ERROR_FIELDS, `${what}error body fields: ${r.text}`);
  assert.equal(r.body.status, status, `${what}${r.text}`);
  assert.ok(Number.isInteger(r.body.code), `${what}integer code: ${r.text}`);
  assert.equal(r.body.code, code, `${what}expected code ${code}: ${r.text}`);
  for (const f of ['type', 'title', 'detail', 'instance', 'error']) assert.equal(typeof r.body[f], 'string', `${what}${f}`);
  if (PROBLEM_TYPE[status]) assert.equal(r.body.type, PROBLEM_TYPE[status], `${what}${r.text}`);
  assert.ok(r.body.instance.length > 0);
  assert.equal(r.body.instance, r.headers.get('x-request-id'), `${what}instance is the request id`);
  if (status === 401) assert.equal(r.headers.get('www-authenticate'), 'Bearer');
  if (expect.msg instanceof RegExp) assert.match(r.body.error, expect.msg, `${what}${r.text}`);
  else if (expect.msg !== undefined)
    assert.ok(String(r.body.error).includes(expect.msg), `${what}'${r.body.error}' should mention '${expect.msg}'`);
}
