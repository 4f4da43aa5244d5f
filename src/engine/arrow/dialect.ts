import type { FastifyRequest } from 'fastify';
import type { SchemaDialect } from './arrow-json-schema';

/** Which client dialect a request speaks: the official remote client (`db://`) or the Lance Namespace spec. */
export type Dialect = 'remote' | 'spec';

/** The official remote client announces itself with `x-lancedb-database` (host override) or its user agent. */
export function dialectOf(req: FastifyRequest): Dialect {
  const ua = String(req.headers['user-agent'] ?? '');
  return req.headers['x-lancedb-database'] !== undefined || /^LanceDB-\w+-Client\//.test(ua) ? 'remote' : 'spec';
}

/**
 * How a dialect spells Arrow types in a JSON schema: the remote client parses Lance's own names (`string`), namespace
 * clients the Lance Namespace converters' (`utf8`); see src/engine/arrow/arrow-json-schema.ts.
 */
export function schemaDialectOf(dialect: Dialect): SchemaDialect {
  return dialect === 'remote' ? 'lance' : 'namespace';
}
