import type { FastifyRequest } from 'fastify';

/** The client's `x-request-timeout-ms` (merge_insert, query), or undefined when absent or not a positive number. */
export function timeoutMs(req: FastifyRequest): number | undefined {
  const raw = req.headers['x-request-timeout-ms'];
  const n = Number(Array.isArray(raw) ? raw[0] : raw);
  return Number.isFinite(n) && n > 0 ? Math.floor(n) : undefined;
}
