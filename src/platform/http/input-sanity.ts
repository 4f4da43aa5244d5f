import type { FastifyReply, FastifyRequest } from 'fastify';
import { Errors } from './errors';
import { sendError } from './http-exception.filter';

/**
 * Strings a caller sends must be text the catalog and the engine can hold. Postgres refuses NUL in `text` and
 * `jsonb` (SQLSTATE 22021 / 22P05) and silently replaces an unpaired UTF-16 surrogate, and the engine's SQL parser
 * and Arrow strings are UTF-8; so such a string is the caller's malformed input (docs/rest-contract.md §7: 400,
 * code 13), named by where it was found, and never reaches a repository or the engine.
 */

/** A NUL, a high surrogate not followed by a low one, or a low surrogate not preceded by a high one. */
const UNSAFE_CHAR = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * JSON nesting deeper than this is refused: no request of the contract nests more than a few levels (the deepest are
 * structured full-text queries), and recursive code further on (query planning, the engine's own query trees) must
 * not be handed an input that exhausts its stack.
 */
export const MAX_INPUT_DEPTH = 64;

/** What is wrong with one string, or undefined when nothing is. */
export function stringProblem(s: string): string | undefined {
  const m = UNSAFE_CHAR.exec(s);
  if (!m) return undefined;
  return m[0] === '\u0000' ? 'contains a NUL character' : 'contains an unpaired UTF-16 surrogate';
}

/** A readable path segment: `a.b` for plain keys, `a["x y"]` (JSON-escaped, so never raw NUL) otherwise. */
function child(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) return path ? `${path}.${key}` : key;
  return `${path}[${JSON.stringify(key)}]`;
}

/**
 * The first unusable string in a parsed value (object keys included), as a sentence naming where it is
 * (`properties.p contains a NUL character`), or undefined. Walks without recursion, so depth cannot overflow it.
 */
export function findUnsafeString(value: unknown, root: string): string | undefined {
  const stack: Array<{ v: unknown; path: string; depth: number }> = [{ v: value, path: root, depth: 0 }];
  while (stack.length > 0) {
    const { v, path, depth } = stack.pop()!;
    if (typeof v === 'string') {
      const p = stringProblem(v);
      if (p) return `${path || 'the value'} ${p}`;
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    if (depth >= MAX_INPUT_DEPTH) return `${path || 'the request body'} is nested deeper than ${MAX_INPUT_DEPTH} levels`;
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) {
        const item = v[i];
        // Numbers, booleans and nulls are the bulk of large bodies (vectors): skip them without a stack entry.
        if (typeof item === 'string' || (item !== null && typeof item === 'object'))
          stack.push({ v: item, path: child(path, i), depth: depth + 1 });
      }
      continue;
    }
    const keys = Object.keys(v);
    for (let i = keys.length - 1; i >= 0; i--) {
      const k = keys[i];
      const kp = stringProblem(k);
      if (kp) return `a key of ${path || 'the request body'} ${kp}`;
      stack.push({ v: (v as Record<string, unknown>)[k], path: child(path, k), depth: depth + 1 });
    }
  }
  return undefined;
}

/** Throws 400 (code 13) naming the first unusable string in `value`. */
export function assertSafeStrings(value: unknown, root: string): void {
  const problem = findUnsafeString(value, root);
  if (problem) throw Errors.invalidInput(problem);
}

/** The first problem among a request's path parameters, query string and parsed JSON body. */
export function requestInputProblem(req: { params?: unknown; query?: unknown; body?: unknown }): string | undefined {
  for (const [name, value] of Object.entries((req.params ?? {}) as Record<string, unknown>)) {
    const p = findUnsafeString(value, `path parameter ${name}`);
    if (p) return p;
  }
  for (const [name, value] of Object.entries((req.query ?? {}) as Record<string, unknown>)) {
    const kp = stringProblem(name);
    if (kp) return `a query parameter name ${kp}`;
    const p = findUnsafeString(value, `query parameter ${name}`);
    if (p) return p;
  }
  return findUnsafeString(req.body, '');
}

/**
 * Fastify `preHandler` hook: answers 400 before any guard, pipe or handler sees the request. Arrow bodies are
 * not parsed by the framework (req.body is undefined), so only their query string and path are checked here.
 */
export async function inputSanityHook(req: { params?: unknown; query?: unknown; body?: unknown }, reply: unknown): Promise<unknown> {
  const problem = requestInputProblem(req);
  if (!problem) return undefined;
  // Typed structurally: Nest's Fastify and the root one declare their request types apart.
  sendError(Errors.invalidInput(problem), req as FastifyRequest, reply as FastifyReply);
  return reply; // answered: Fastify runs nothing further for this request
}
