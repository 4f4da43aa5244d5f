import type { z } from 'zod';

/**
 * What a handler reads from the request, recorded by its parameter decorators (ValidBody, ValidQuery, ObjectId,
 * Delimiter, ArrowStream), so the OpenAPI document describes a route from what the route actually reads.
 */
export interface RequestParts {
  body?: z.ZodType;
  query?: z.ZodObject;
  /** An Arrow IPC stream body: what it holds. */
  arrowStream?: string;
  /** The `{id}` object identifier, split by `?delimiter=`. */
  objectId?: boolean;
  /** `?delimiter=` itself (routes that answer identifiers). */
  delimiter?: boolean;
}

const REQUEST_PARTS = 'lgw:request-parts';

/** Called by parameter decorators: `target` and `key` are the handler's prototype and method name. */
export function recordRequestPart(target: object, key: string | symbol | undefined, part: RequestParts): void {
  if (key === undefined) return; // a constructor parameter: no handler
  const handler = (target as Record<string | symbol, unknown>)[key] as object;
  Reflect.defineMetadata(REQUEST_PARTS, { ...requestPartsOf(handler), ...part }, handler);
}

export function requestPartsOf(handler: object): RequestParts {
  return (Reflect.getMetadata(REQUEST_PARTS, handler) as RequestParts | undefined) ?? {};
}
