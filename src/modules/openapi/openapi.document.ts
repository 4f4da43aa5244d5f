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
import { Access, ErrorStatus, JsonSchema, OperationDoc, operationOf, ParamDoc } from '../../platform/http/operation.decorator';

/** Where the document and its browsable page are served (outside BASE_PATH). */
export const OPENAPI_JSON_PATH = '/openapi.json';
export const DOCS_PATH = '/docs';

const ID_DESCRIPTION =
  'Object identifier: the parts of its path joined by `delimiter` (default `$`), percent-encoded ' +
  '(`["sales", "orders"]` → `sales%24orders`). The delimiter alone (`%24`) is the root namespace. Parts may use ' +
  'letters, digits, `_`, `-` and `.`.';

const DELIMITER: ParamDoc = {
  name: 'delimiter',
  in: 'query',
  description:
    'Separator of the parts of `{id}` (and of the identifiers ListAllTables answers). Optional; default `$`. ' +
    'May be longer than one character (`::`).',
  schema: { type: 'string', default: '$' },
};

/** The database headers of every REST-contract route (tenancy: see the README). */
const DATABASE_HEADERS: ParamDoc[] = [
  {
    name: 'x-service-database',
    in: 'header',
    description:
      'The database (tenant) addressed. `x-lancedb-database` (what the official clients send) is accepted too. ' +
      'Needed unless the host name selects the database (TENANT_HOST_SUFFIX); a header and a host that disagree → 400.',
    schema: { type: 'string' },
  },
  {
    name: 'x-service-database-prefix',
    in: 'header',
    description:
      'Selects a separate catalog inside the database, with its own namespace tree and storage folder ' +
      '(alias `x-lancedb-database-prefix`, sent by the official client for `db://acme/team1`).',
    schema: { type: 'string' },
  },
];

const REQUEST_ID_HEADER: ParamDoc = {
  name: 'x-request-id',
  in: 'header',
  description: 'Request id (`[A-Za-z0-9._:-]{1,128}`); echoed in the response header and in error bodies\' `instance`. Generated when absent.',
  schema: { type: 'string' },
};

/** On the routes that change something (docs/idempotency.md). */
const IDEMPOTENCY_KEY_HEADER: ParamDoc = {
  name: 'Idempotency-Key',
  in: 'header',
  description:
    'Makes the write exactly-once: a retry with the same key (and the same body and route) is answered with the first ' +
    'attempt\'s answer and changes nothing; the same key with another body or route is a 422. A client\'s own ' +
    '`x-request-id` does the same for a shorter window. 1-255 visible ASCII characters.',
  schema: { type: 'string', minLength: 1, maxLength: 255 },
};

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
type Method = (typeof METHODS)[number];
type Operation = Record<string, unknown>;

export const SECURITY_SCHEMES = {
  ApiKeyAuth: {
    type: 'apiKey',
    in: 'header',
    name: 'x-api-key',
    description:
      'An API key of the database (`lgw_…`; roles read, write, admin). The REST contract also reads ' +
      '`identity.api_key` from the request body when no header carries a credential.',
  },
  BearerAuth: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description:
      'An OAuth 2.0 access token (JWT) from the configured authorization server (OAUTH_JWKS_URI, OAUTH_ISSUER, ' +
      'OAUTH_AUDIENCE): databases from the `databases` claim, role from `scope`. Also read from `identity.auth_token`.',
  },
  OperatorKeyAuth: {
    type: 'apiKey',
    in: 'header',
    name: 'x-api-key',
    description: 'The operator key (ADMIN_API_KEY), sent as `x-api-key`. The operator API is off when it is unset.',
  },
  MetricsKeyAuth: {
    type: 'http',
    scheme: 'bearer',
    description: 'METRICS_API_KEY, as `Authorization: Bearer <key>` (or as `x-api-key`). Without METRICS_API_KEY, /metrics is open.',
  },
} as const;

const SECURITY: Record<Access, Array<Record<string, string[]>>> = {
  catalog: [{ ApiKeyAuth: [] }, { BearerAuth: [] }],
  operator: [{ OperatorKeyAuth: [] }],
  'database-admin': [{ OperatorKeyAuth: [] }, { ApiKeyAuth: [] }, { BearerAuth: [] }],
  // `{}`: no credential, when METRICS_API_KEY is unset.
  metrics: [{ MetricsKeyAuth: [] }, {}],
  public: [],
};

const ACCESS_TEXT: Record<Access, (role?: string) => string> = {
  catalog: (role) =>
    `Needs a credential of the database with role \`${role ?? 'read'}\` or higher: \`x-api-key\`, ` +
    '`Authorization: Bearer <JWT>`, or `identity` in the body. Counted against the database\'s rate limit ' +
    '(503, code 21, `Retry-After` when exceeded).',
  operator: () => 'Operator key only (`x-api-key: <ADMIN_API_KEY>`); any other valid credential → 403.',
  'database-admin': () =>
    'The operator key, or an `admin` credential of that database (admin API key, or a token with scope `admin`).',
  metrics: () =>
    'When METRICS_API_KEY is set, the key as `Authorization: Bearer <key>` or `x-api-key` (else 401); otherwise no credential.',
  public: () => 'No credential.',
};

/** The error answers (docs/rest-contract.md §7), one per status, all with the ErrorResponse body. */
const ERROR_RESPONSES: Record<string, { status: ErrorStatus; description: string; headers?: Record<string, unknown> }> = {
  BadRequest: { status: 400, description: 'Malformed request or invalid input (code 13; 20 for schema validation).' },
  Unauthorized: {
    status: 401,
    description: 'Missing, invalid, expired, revoked or forged credential (code 16).',
    headers: { 'WWW-Authenticate': { description: '`Bearer`', schema: { type: 'string' } } },
  },
  Forbidden: { status: 403, description: 'Valid credential, but not for this database or a role too weak (code 15).' },
  NotFound: { status: 404, description: 'The database, namespace (code 1), table (code 4) or other object does not exist.' },
  NotAcceptable: { status: 406, description: 'Operation not supported (code 0).' },
  Conflict: { status: 409, description: 'Already exists, not empty, or modified concurrently (codes 2, 3, 5, 7, 14).' },
  PayloadTooLarge: { status: 413, description: 'The body is above the configured limit.' },
  UnsupportedMediaType: { status: 415, description: 'The body is not an Arrow IPC stream.' },
  ServiceUnavailable: {
    status: 503,
    description: 'Rate limit exceeded (code 21, title "Slow down"), or the catalog database is unreachable (code 17).',
    headers: { 'Retry-After': { description: 'seconds to wait', schema: { type: 'integer' } } },
  },
  ServerError: { status: '5XX', description: 'Unexpected server error (code 18).' },
};
const ERROR_RESPONSE_NAME = new Map(Object.entries(ERROR_RESPONSES).map(([name, r]) => [String(r.status), name]));

const TAGS = [
  { name: 'Namespace', description: 'Lance Namespace REST: namespaces' },
  { name: 'Table', description: 'Lance Namespace REST: tables in the catalog' },
  { name: 'Table data', description: 'Lance Namespace REST: data operations, served by the gateway' },
  { name: 'Index', description: 'Lance Namespace REST: indexes' },
  { name: 'Transaction', description: 'Lance Namespace REST: long-running operations' },
  { name: 'Enterprise', description: 'Routes of the extended edition (docs/rest-contract.md §4.7)' },
  { name: 'Jobs', description: 'Long operations (backfill_column) kept in the catalog and run by any replica: list, describe, cancel' },
  { name: 'Operator', description: 'Databases (tenants), API keys and the audit trail' },
  { name: 'Health', description: 'Liveness and readiness' },
  { name: 'Observability', description: 'Metrics' },
  { name: 'Documentation', description: 'This document' },
];

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

/** Converts zod schemas to JSON Schema (draft 2020-12, the dialect of OpenAPI 3.1) into `components.schemas`. */
class SchemaComponents {
  readonly schemas: Record<string, JsonSchema> = {};

  /**
   * The inline schema, or a `$ref` to a named component: the schema's own `id` (`.meta`) names it, else `name`
   * when given.
   */
  convert(schema: z.ZodType, io: 'input' | 'output', name?: string): JsonSchema {
    let json: JsonSchema;
    try {
      json = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as JsonSchema;
    } catch (err) {
      return { description: `schema not convertible: ${(err as Error).message}` };
    }
    delete json.$schema;
    const defs = (json.$defs ?? {}) as Record<string, JsonSchema>;
    delete json.$defs;
    // Named sub-schemas (`.meta({ id })`) become components of their own; anonymous ones (cycles) get a prefix.
    const rename = (def: string) => (def.startsWith('__') ? `${name ?? 'Schema'}${def}` : def);
    const rewrite = (v: unknown): unknown => {
      if (Array.isArray(v)) return v.map(rewrite);
      if (v && typeof v === 'object') {
        const out: Record<string, unknown> = {};
        for (const [k, x] of Object.entries(v)) {
          // zod bounds every integer to the safe range: true of every JSON number this gateway sends, so left out.
          if ((k === 'minimum' && x === Number.MIN_SAFE_INTEGER) || (k === 'maximum' && x === Number.MAX_SAFE_INTEGER)) continue;
          out[k] = k === '$ref' && typeof x === 'string' && x.startsWith('#/$defs/') ? `#/components/schemas/${rename(x.slice(8))}` : rewrite(x);
        }
        return out;
      }
      return v;
    };
    for (const [def, body] of Object.entries(defs)) this.schemas[rename(def)] = rewrite(body) as JsonSchema;
    const result = rewrite(json) as JsonSchema;
    if (!name || typeof result.$ref === 'string') return result;
    this.schemas[name] = result;
    return { $ref: `#/components/schemas/${name}` };
  }
}

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
  const out: Record<string, unknown> = { name: p.name, in: p.in, description: p.description, required: p.required ?? p.in === 'path', schema: p.schema };
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
  if (doc.access === 'catalog' && doc.role && doc.role !== 'read') parameters.push(paramObject(IDEMPOTENCY_KEY_HEADER));

  const operation: Operation = {
    operationId: doc.operationId,
    summary: doc.summary,
    description: [doc.description, ACCESS_TEXT[doc.access](doc.role)].filter(Boolean).join('\n\n'),
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
  if (doc.access === 'catalog') operation['x-required-role'] = doc.role ?? 'read';
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
    paramObject({ name: p, in: 'path', required: true, description: p === 'id' && rest ? ID_DESCRIPTION : `\`${p}\``, schema: { type: 'string' } }),
  );
  if (rest && pathParamsOf(scannedPath).includes('id')) parameters.push(paramObject(DELIMITER));
  if (rest) for (const h of DATABASE_HEADERS) parameters.push(paramObject(h));
  parameters.push(paramObject(REQUEST_ID_HEADER));
  const success = Object.fromEntries(
    Object.entries((scanned.responses ?? {}) as Record<string, { description?: string }>).map(([s, r]) => [s, { ...r, description: r.description || 'Success' }]),
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
        '`detail`, `instance` (the request id) plus the spec\'s integer `code` and `error` message.',
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
      const rel = config.basePath && scannedPath.startsWith(`${config.basePath}/`) ? scannedPath.slice(config.basePath.length) : scannedPath;
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
