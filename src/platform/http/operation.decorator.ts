import { applyDecorators, CanActivate, HttpCode, SetMetadata, Type, UseGuards, UseInterceptors } from '@nestjs/common';
import type { z } from 'zod';
import { AdminKeyGuard, DatabaseAdminGuard } from '../../modules/identity/auth/admin-key.guard';
import type { Role } from '../../modules/identity/auth/api-keys.repository';
import { CatalogAccessGuard } from '../../modules/identity/auth/catalog-access.guard';
import { IdempotencyInterceptor } from '../../modules/idempotency/idempotency.interceptor';
import { RequiresRole } from '../../modules/identity/auth/requires-role.decorator';
import { MetricsKeyGuard } from '../observability/metrics-key.guard';
import { DatabaseThrottlerGuard } from '../../modules/throttling/database-throttler.guard';

/**
 * The facts of a route, written once on its handler: who may call it (the guards and the least role that enforce
 * it), its success status, and what the OpenAPI document says about it. What the handler reads (body and query
 * schemas, `{id}`, an Arrow stream) comes from its parameter decorators (src/platform/http/validation/); the document
 * (openapi.document.ts) puts both together.
 */

/** Who may call a route. */
export type Access = 'catalog' | 'operator' | 'database-admin' | 'metrics' | 'public';

/** The guards each kind of access puts on a route, in the order they run. */
export const ACCESS_GUARDS: Record<Access, Type<CanActivate>[]> = {
  /** A credential of the database (else 401/403), then the database's rate limit. */
  catalog: [CatalogAccessGuard, DatabaseThrottlerGuard],
  /** The operator key only. */
  operator: [AdminKeyGuard],
  /** The operator key, or an admin credential of the database named in the path. */
  'database-admin': [DatabaseAdminGuard],
  /** METRICS_API_KEY when it is set; open otherwise. */
  metrics: [MetricsKeyGuard],
  public: [],
};

export type ErrorStatus = 400 | 401 | 403 | 404 | 406 | 409 | 413 | 415 | 503 | '5XX';
export type JsonSchema = Record<string, unknown>;
export type Tag =
  | 'Namespace'
  | 'Table'
  | 'Table data'
  | 'Index'
  | 'Transaction'
  | 'Enterprise'
  | 'Jobs'
  | 'Operator'
  | 'Health'
  | 'Observability'
  | 'Documentation';

export interface ParamDoc {
  name: string;
  in: 'query' | 'header' | 'path';
  description: string;
  required?: boolean;
  schema: JsonSchema;
  style?: 'form' | 'simple';
  explode?: boolean;
}

export interface ResponseDoc {
  description: string;
  /** A JSON answer (named in the document when the schema has an `id`). */
  schema?: z.ZodType;
  /** The handler sends the JSON text itself (a bare JSON number or string literal). */
  encoded?: true;
  /** A non-JSON answer (Arrow IPC file, text). */
  raw?: { contentType: string; schema: JsonSchema };
  headers?: Record<string, { description: string; schema: JsonSchema }>;
}

interface OperationDocBase<Rs> {
  operationId: string;
  summary: string;
  description?: string;
  tag: Tag;
  /** Path parameters by the name the route uses; `rename` shows one under another name (the spec's). */
  pathParams?: Record<string, { description: string; rename?: string }>;
  /** Headers the handler reads (the database headers of catalog routes are added by the document). */
  headers?: ParamDoc[];
  /** Success answers by status; the lowest is the route's status unless the handler sets another. */
  responses: Rs;
  errors: ErrorStatus[];
}

/** What @Operation records; `role` is the least role a catalog route needs (default `read`). */
export type OperationDoc<Rs extends Record<number, ResponseDoc> = Record<number, ResponseDoc>> = OperationDocBase<Rs> &
  ({ access: 'catalog'; role?: Role } | { access: Exclude<Access, 'catalog'>; role?: never });

/** What a handler may return for a documented answer: the schema's type, so drift is a compile error. */
type AnswerOf<R> = R extends { schema: infer S extends z.ZodType }
  ? R extends { encoded: true }
    ? string
    : z.infer<S>
  : R extends { raw: object }
    ? unknown
    : void | undefined;
type Answer<Rs> = { [K in keyof Rs]: AnswerOf<Rs[K]> }[keyof Rs];
type HandlerOf<Rs> = (...args: never[]) => Answer<Rs> | Promise<Answer<Rs>>;

const OPERATION = 'lgw:operation';

/**
 * Declares a route: its guards (from `access`), its least role, its success status, and its OpenAPI description.
 * The handler's return type must match the documented answers.
 */
export function Operation<const Rs extends Record<number, ResponseDoc>>(doc: OperationDoc<Rs>) {
  const guards = ACCESS_GUARDS[doc.access];
  const status = Math.min(...Object.keys(doc.responses).map(Number));
  const decorate = applyDecorators(
    SetMetadata(OPERATION, doc),
    HttpCode(status),
    ...(guards.length ? [UseGuards(...guards)] : []),
    ...(doc.access === 'catalog' ? [RequiresRole(doc.role ?? 'read')] : []),
    // Catalog routes that change something answer a retried request once (docs/idempotency.md).
    ...(doc.access === 'catalog' && doc.role && doc.role !== 'read' ? [UseInterceptors(IdempotencyInterceptor)] : []),
  );
  return <H extends HandlerOf<Rs>>(target: object, key: string | symbol, descriptor: TypedPropertyDescriptor<H>): void => {
    decorate(target, key, descriptor);
  };
}

export function operationOf(handler: object): OperationDoc | undefined {
  return Reflect.getMetadata(OPERATION, handler) as OperationDoc | undefined;
}

// ---------------------------------------------------------------------------------------------- shared pieces

/** The error answers of the kinds of route, for `errors`. */
export const CATALOG_ERRORS: ErrorStatus[] = [400, 401, 403, 404, 503, '5XX'];
export const WITH_CONFLICT: ErrorStatus[] = [400, 401, 403, 404, 409, 503, '5XX'];
export const ARROW_ERRORS: ErrorStatus[] = [400, 401, 403, 404, 409, 413, 415, 503, '5XX'];
export const OPERATOR_ERRORS: ErrorStatus[] = [400, 401, 403, 404, 503, '5XX'];

export const TIMEOUT_HEADER: ParamDoc = {
  name: 'x-request-timeout-ms',
  in: 'header',
  description: 'Gives up on the operation after this many milliseconds.',
  schema: { type: 'integer', minimum: 1 },
};

export const ARROW_FILE = 'application/vnd.apache.arrow.file';
export const VERSION_HEADER = { 'x-lancedb-version': { description: 'the table version read', schema: { type: 'integer' } } };
