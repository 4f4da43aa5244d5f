import * as fs from 'node:fs';
import * as path from 'node:path';
import type { INestApplication } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { z } from 'zod';
import { ErrorResponse } from '../../platform/http/error-body.schema';
import { RequestParts, requestPartsOf } from '../../platform/http/validation/request-parts';
import type { AppConfig } from '../../platform/config/config';
import { LANCE_SPEC_OPERATIONS } from './lance-spec-operations';
import { ErrorStatus, JsonSchema, OperationDoc, operationOf, ParamDoc } from '../../platform/http/operation.decorator';
import { roleOfPrivilege } from '../../platform/http/route-access';
import {
  ACCESS_TEXT,
  DATABASE_HEADERS,
  DELIMITER,
  ERROR_RESPONSE_NAME,
  ERROR_RESPONSES,
  ID_DESCRIPTION,
  IDEMPOTENCY_KEY_HEADER,
  REQUEST_ID_HEADER,
  SECURITY,
  SECURITY_SCHEMES,
  TAGS,
} from './openapi.parts';
import { SchemaComponents } from './schema-components';

/** Where the document and its browsable page are served (outside BASE_PATH). */
export const OPENAPI_JSON_PATH = '/openapi.json';
export const DOCS_PATH = '/docs';

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
type Method = (typeof METHODS)[number];
type Operation = Record<string, unknown>;

/** Routes served outside Nest's controllers (registered by SwaggerModule.setup): described here. */
const DOCUMENTATION_OPERATIONS: Record<string, OperationDoc> = {
  [`GET ${OPENAPI_JSON_PATH}`]: {
    operationId: 'GetOpenApiDocument',
    summary: 'This OpenAPI document',
    tag: 'Documentation',
    access: 'public',
    responses: { 200: { description: 'OpenAPI 3.1 document', raw: { contentType: 'application/json', schema: { type: 'object' } } } },
    errors: [],
  },
  [`GET ${DOCS_PATH}`]: {
    operationId: 'GetApiDocsPage',
    summary: 'Browsable API documentation (Swagger UI)',
    tag: 'Documentation',
    access: 'public',
    responses: { 200: { description: 'HTML page', raw: { contentType: 'text/html', schema: { type: 'string' } } } },
    errors: [],
  },
};

/** `/v1/table/{id}/index/{name}/stats` → `/v1/table/{}/index/{}/stats`, to compare routes whatever their param names. */
export function pathShape(p: string): string {
  return p.replace(/\{[^}]+\}/g, '{}');
}

const SPEC_BY_SHAPE = new Map<string, [string, string]>(
  Object.entries(LANCE_SPEC_OPERATIONS).map(([key, v]) => {
    const [method, p] = key.split(' ');
    return [`${method} ${pathShape(p)}`, v];
  }),
);

function paramObject(p: ParamDoc): Record<string, unknown> {
  const out: Record<string, unknown> = {
    name: p.name,
    in: p.in,
    description: p.description,
    required: p.required ?? p.in === 'path',
    schema: p.schema,
  };
  if (p.style) out.style = p.style;
  if (p.explode !== undefined) out.explode = p.explode;
  return out;
}

function errorResponses(statuses: ErrorStatus[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const s of statuses) out[String(s)] = { $ref: `#/components/responses/${ERROR_RESPONSE_NAME.get(String(s))}` };
  return out;
}

function pathParamsOf(docPath: string): string[] {
  return [...docPath.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
}

/** The query parameters of a route, one per property of its query schema. */
function queryParameters(schema: z.ZodObject, components: SchemaComponents): ParamDoc[] {
  const json = components.convert(schema, 'input');
  const required = new Set((json.required as string[] | undefined) ?? []);
  return Object.entries((json.properties ?? {}) as Record<string, JsonSchema>).map(([name, prop]) => {
    const { description, ...rest } = prop;
    // A query string has no null: `null` in a type list is the body rules' tolerance, not a query value.
    if (Array.isArray(rest.type)) {
      const types = (rest.type as string[]).filter((t) => t !== 'null');
      rest.type = types.length === 1 ? types[0] : types;
    }
    const param: ParamDoc = { name, in: 'query', description: String(description ?? ''), required: required.has(name), schema: rest };
    if (rest.type === 'array') Object.assign(param, { style: 'form', explode: true });
    return param;
  });
}

/**
 * The operation object of a route described by @Operation, with what its handler reads (`parts`); `docPath` gets
 * the renamed path parameters.
 */
function describedOperation(
  doc: OperationDoc,
  parts: RequestParts,
  scannedPath: string,
  components: SchemaComponents,
): { docPath: string; operation: Operation } {
  let docPath = scannedPath;
  const parameters: Record<string, unknown>[] = [];
  for (const p of pathParamsOf(scannedPath)) {
    const d = doc.pathParams?.[p];
    const name = d?.rename ?? p;
    if (d?.rename) docPath = docPath.replace(`{${p}}`, `{${name}}`);
    const description = d?.description ?? (p === 'id' && parts.objectId ? ID_DESCRIPTION : `\`${p}\``);
    parameters.push(paramObject({ name, in: 'path', required: true, description, schema: { type: 'string' } }));
  }
  if (parts.objectId || parts.delimiter) parameters.push(paramObject(DELIMITER));
  if (parts.query) for (const q of queryParameters(parts.query, components)) parameters.push(paramObject(q));
  for (const h of doc.headers ?? []) parameters.push(paramObject(h));
  if (doc.access === 'catalog') for (const h of DATABASE_HEADERS) parameters.push(paramObject(h));
  parameters.push(paramObject(REQUEST_ID_HEADER));
  if (doc.access === 'catalog' && roleOfPrivilege(doc.needs.privilege) !== 'read') parameters.push(paramObject(IDEMPOTENCY_KEY_HEADER));

  const operation: Operation = {
    operationId: doc.operationId,
    summary: doc.summary,
    description: [doc.description, ACCESS_TEXT[doc.access](doc.needs)].filter(Boolean).join('\n\n'),
    tags: [doc.tag],
    parameters,
  };
  if (parts.body) {
    // A body is required when reading an absent one (as `{}`) would fail.
    const required = !parts.body.safeParse({}).success;
    operation.requestBody = {
      required,
      description: required
        ? undefined
        : 'Optional: an absent, empty or `null` body reads as `{}`. Unknown fields are ignored; `null` fields count as absent.',
      content: { 'application/json': { schema: components.convert(parts.body, 'input', `${doc.operationId}Request`) } },
    };
  } else if (parts.arrowStream) {
    operation.requestBody = {
      required: true,
      description: parts.arrowStream,
      content: { 'application/vnd.apache.arrow.stream': { schema: { type: 'string', format: 'binary' } } },
    };
  }
  const responses: Record<string, unknown> = {};
  for (const [status, r] of Object.entries(doc.responses)) {
    const out: Record<string, unknown> = { description: r.description };
    if (r.headers) out.headers = r.headers;
    if (r.schema) out.content = { 'application/json': { schema: components.convert(r.schema, 'output') } };
    else if (r.raw) out.content = { [r.raw.contentType]: { schema: r.raw.schema } };
    responses[status] = out;
  }
  operation.responses = { ...responses, ...errorResponses(doc.errors) };
  operation.security = SECURITY[doc.access];
  if (doc.access === 'catalog') {
    operation['x-required-role'] = roleOfPrivilege(doc.needs.privilege);
    operation['x-required-privilege'] = { privilege: doc.needs.privilege, on: doc.needs.on };
  }
  return { docPath, operation };
}

/**
 * A route without @Operation (e.g. one added without it): documented from what the scan
 * found, named after the Lance spec operation at the same method and path when there is one, with the parameters,
 * credentials and error answers its place implies.
 */
function scannedOperation(method: Method, scannedPath: string, key: string, rest: boolean, scanned: Operation): Operation {
  const spec = rest ? SPEC_BY_SHAPE.get(pathShape(key)) : undefined;
  const admin = scannedPath.startsWith('/admin/');
  const parameters: Record<string, unknown>[] = pathParamsOf(scannedPath).map((p) =>
    paramObject({
      name: p,
      in: 'path',
      required: true,
      description: p === 'id' && rest ? ID_DESCRIPTION : `\`${p}\``,
      schema: { type: 'string' },
    }),
  );
  if (rest && pathParamsOf(scannedPath).includes('id')) parameters.push(paramObject(DELIMITER));
  if (rest) for (const h of DATABASE_HEADERS) parameters.push(paramObject(h));
  parameters.push(paramObject(REQUEST_ID_HEADER));
  const success = Object.fromEntries(
    Object.entries((scanned.responses ?? {}) as Record<string, { description?: string }>).map(([s, r]) => [
      s,
      { ...r, description: r.description || 'Success' },
    ]),
  );
  const op: Operation = {
    operationId: spec?.[0] ?? scanned.operationId,
    summary: spec?.[1] ?? `${method.toUpperCase()} ${scannedPath}`,
    description: 'Not described in detail yet (no @Operation on its handler).' + (rest ? `\n\n${ACCESS_TEXT.catalog()}` : ''),
    tags: scanned.tags ?? [],
    parameters,
    responses: { ...success, ...errorResponses(rest || admin ? [400, 401, 403, 404, 503, '5XX'] : []) },
  };
  if (rest) op.security = SECURITY.catalog;
  else if (admin) op.security = SECURITY['database-admin'];
  return op;
}

/** The controllers' handlers, by the operationId the scan gives their routes (`<Controller>_<method>`). */
function handlersByOperationId(app: INestApplication): Map<string, object> {
  const out = new Map<string, object>();
  for (const module of app.get(ModulesContainer).values()) {
    for (const { metatype } of module.controllers.values()) {
      const proto = (metatype as { prototype?: Record<string, unknown> } | null)?.prototype;
      if (!metatype || !proto) continue;
      for (const key of Object.getOwnPropertyNames(proto)) {
        const handler = proto[key];
        if (key !== 'constructor' && typeof handler === 'function') out.set(`${metatype.name}_${key}`, handler);
      }
    }
  }
  return out;
}

function packageVersion(): string {
  for (let dir = __dirname, i = 0; i < 6; i++, dir = path.dirname(dir)) {
    try {
      const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'lance-gateway' && pkg.version) return pkg.version;
    } catch {
      /* keep looking */
    }
  }
  return '0.0.0';
}

/**
 * The OpenAPI 3.1 document of every route the gateway serves: the controllers' routes as Nest registered them
 * (scanned by SwaggerModule.createDocument, so new routes appear by themselves, under BASE_PATH where it applies),
 * each described by its handler's @Operation and the schemas its parameters validate with, plus the documentation
 * routes themselves.
 */
export function buildOpenApiDocument(app: INestApplication, config: AppConfig): OpenAPIObject {
  const base = new DocumentBuilder()
    .setTitle('Lance Gateway')
    .setVersion(packageVersion())
    .setOpenAPIVersion('3.1.0')
    .setDescription(
      'Multi-tenant gateway for Lance tables: the Lance Namespace REST API (under BASE_PATH' +
        (config.basePath ? ` \`${config.basePath}\`` : ', empty here') +
        '), the Enterprise routes, the operator API, health and metrics.\n\n' +
        'Every 4xx/5xx answer carries the ErrorResponse body: the problem-details fields `type`, `title`, `status`, ' +
        "`detail`, `instance` (the request id) plus the spec's integer `code` and `error` message.",
    )
    .setLicense('Apache 2.0', 'https://www.apache.org/licenses/LICENSE-2.0.html')
    .build();
  const scanned = SwaggerModule.createDocument(app, base);
  const handlers = handlersByOperationId(app);
  const components = new SchemaComponents();
  const paths: Record<string, Record<string, Operation>> = {};
  const usedIds = new Set<string>();
  const add = (docPath: string, method: Method, op: Operation) => {
    let id = String(op.operationId);
    for (let n = 2; usedIds.has(id); n++) id = `${op.operationId}_${n}`;
    usedIds.add(id);
    (paths[docPath] ??= {})[method] = { ...op, operationId: id };
  };

  for (const [scannedPath, item] of Object.entries(scanned.paths)) {
    for (const method of METHODS) {
      const op = (item as Record<string, Operation | undefined>)[method];
      if (!op) continue;
      const rel =
        config.basePath && scannedPath.startsWith(`${config.basePath}/`) ? scannedPath.slice(config.basePath.length) : scannedPath;
      const rest = rel.startsWith('/v1/') || rel === '/v1';
      const key = `${method.toUpperCase()} ${rest ? rel : scannedPath}`;
      const handler = handlers.get(String(op.operationId));
      const doc = handler && operationOf(handler);
      if (handler && doc) {
        const d = describedOperation(doc, requestPartsOf(handler), scannedPath, components);
        add(d.docPath, method, d.operation);
      } else {
        add(scannedPath, method, scannedOperation(method, scannedPath, key, rest, op));
      }
    }
  }
  for (const [key, doc] of Object.entries(DOCUMENTATION_OPERATIONS)) {
    const [method, p] = key.split(' ');
    const d = describedOperation(doc, {}, p, components);
    add(d.docPath, method.toLowerCase() as Method, d.operation);
  }

  components.convert(ErrorResponse, 'output'); // named by its id
  const responses: Record<string, unknown> = {};
  for (const [name, r] of Object.entries(ERROR_RESPONSES)) {
    responses[name] = {
      description: r.description,
      ...(r.headers ? { headers: r.headers } : {}),
      content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorResponse' } } },
    };
  }
  return {
    ...scanned,
    tags: TAGS,
    paths: paths as OpenAPIObject['paths'],
    components: {
      ...scanned.components,
      schemas: { ...(scanned.components?.schemas ?? {}), ...components.schemas } as NonNullable<OpenAPIObject['components']>['schemas'],
      responses: responses as NonNullable<OpenAPIObject['components']>['responses'],
      securitySchemes: SECURITY_SCHEMES as unknown as NonNullable<OpenAPIObject['components']>['securitySchemes'],
    },
  };
}
