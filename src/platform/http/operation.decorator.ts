import { applyDecorators, HttpCode, SetMetadata, UseGuards, UseInterceptors } from '@nestjs/common';
import type { z } from 'zod';
import { Access, CatalogWriteInterceptor, Privilege, Role, roleOfPrivilege, ROUTE_ACCESS, RouteAccessGuard, Target } from './route-access';

export type { Access, Privilege, Role, Target } from './route-access';

/**
 * The facts of a route, written once on its handler: who may call it (the guards and the least role that enforce
 * it), its success status, and what the OpenAPI document says about it. What the handler reads (body and query
 * schemas, `{id}`, an Arrow stream) comes from its parameter decorators (src/platform/http/validation/); the document
 * (openapi.document.ts) puts both together.
 */

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
  | 'Events'
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

/** What a catalog route needs: a privilege, on what, and whether the route makes that object. */
export interface CatalogNeed {
  privilege: Privilege;
  on: Target;
  creates?: true;
  /**
   * The answer for a missing object is the service's own (DropNamespace: 400, or 204 with mode Skip): for an object
   * the credential cannot see, the guard lets the request through (recording the refusal) and the service, checking
   * `access.visible` first, answers as if it were missing.
   */
  hiddenAnswered?: true;
}

/** What @Operation records; a catalog route says what it `needs` (docs/access-control.md). */
export type OperationDoc<Rs extends Record<number, ResponseDoc> = Record<number, ResponseDoc>> = OperationDocBase<Rs> &
  ({ access: 'catalog'; needs: CatalogNeed } | { access: Exclude<Access, 'catalog'>; needs?: never });

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
 * Declares a route: its guards (from `access`), what a catalog route needs, its success status, and its OpenAPI description.
 * The handler's return type must match the documented answers.
 */
export function Operation<const Rs extends Record<number, ResponseDoc>>(doc: OperationDoc<Rs>) {
  const status = Math.min(...Object.keys(doc.responses).map(Number));
  const decorate = applyDecorators(
    SetMetadata(OPERATION, doc),
    SetMetadata(ROUTE_ACCESS, doc.access),
    HttpCode(status),
    // The guards of each access and the interceptors of a catalog write are the composition root's
    // (src/route-policy.module.ts): a catalog write is answered once however often it is retried (docs/idempotency.md).
    ...(doc.access === 'public' ? [] : [UseGuards(RouteAccessGuard)]),
    ...(doc.access === 'catalog' && roleOfPrivilege(doc.needs.privilege) !== 'read' ? [UseInterceptors(CatalogWriteInterceptor)] : []),
  );
  return <H extends HandlerOf<Rs>>(target: object, key: string | symbol, descriptor: TypedPropertyDescriptor<H>): void => {
    decorate(target, key, descriptor);
  };
}

export function operationOf(handler: object): OperationDoc | undefined {
  return Reflect.getMetadata(OPERATION, handler) as OperationDoc | undefined;
}

const READ_DATABASE: CatalogNeed = { privilege: 'describe', on: 'database' };

/** What a catalog route needs (a route without @Operation needs `describe` on the database). */
export function catalogNeedOf(handler: object): CatalogNeed {
  return operationOf(handler)?.needs ?? READ_DATABASE;
}

/** The least role a catalog route needs: `read` for describe/select, `admin` for admin, `write` otherwise. */
export function requiredRole(handler: object): Role {
  return roleOfPrivilege(catalogNeedOf(handler).privilege);
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
