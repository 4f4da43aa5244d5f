import { Access, CatalogNeed, ErrorStatus, ParamDoc } from '../../platform/http/operation.decorator';
import { roleOfPrivilege } from '../../platform/http/route-access';

/** The fixed parts of the OpenAPI document: shared parameters, credentials, error answers and tags. */

export const ID_DESCRIPTION =
  'Object identifier: the parts of its path joined by `delimiter` (default `$`), percent-encoded ' +
  '(`["sales", "orders"]` → `sales%24orders`). The delimiter alone (`%24`) is the root namespace. Parts may use ' +
  'letters, digits, `_`, `-` and `.`.';

export const DELIMITER: ParamDoc = {
  name: 'delimiter',
  in: 'query',
  description:
    'Separator of the parts of `{id}` (and of the identifiers ListAllTables answers). Optional; default `$`. ' +
    'May be longer than one character (`::`).',
  schema: { type: 'string', default: '$' },
};

/** The database headers of every REST-contract route (tenancy: docs/concepts.md). */
export const DATABASE_HEADERS: ParamDoc[] = [
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

export const REQUEST_ID_HEADER: ParamDoc = {
  name: 'x-request-id',
  in: 'header',
  description:
    "Request id (`[A-Za-z0-9._:-]{1,128}`); echoed in the response header and in error bodies' `instance`. Generated when absent.",
  schema: { type: 'string' },
};

/** On the routes that change something (docs/idempotency.md). */
export const IDEMPOTENCY_KEY_HEADER: ParamDoc = {
  name: 'Idempotency-Key',
  in: 'header',
  description:
    'Makes the write exactly-once: a retry with the same key (and the same body and route) is answered with the first ' +
    "attempt's answer and changes nothing; the same key with another body or route is a 422. A client's own " +
    '`x-request-id` does the same for a shorter window. 1-255 visible ASCII characters.',
  schema: { type: 'string', minLength: 1, maxLength: 255 },
};

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

export const SECURITY: Record<Access, Array<Record<string, string[]>>> = {
  catalog: [{ ApiKeyAuth: [] }, { BearerAuth: [] }],
  operator: [{ OperatorKeyAuth: [] }],
  'database-admin': [{ OperatorKeyAuth: [] }, { ApiKeyAuth: [] }, { BearerAuth: [] }],
  // `{}`: no credential, when METRICS_API_KEY is unset.
  metrics: [{ MetricsKeyAuth: [] }, {}],
  public: [],
};

const ON_TEXT: Record<CatalogNeed['on'], string> = {
  table: 'the table `{id}` (from the database or a namespace above it)',
  namespace: 'the namespace `{id}` (from the database or a namespace above it)',
  database: 'the database',
  listing: 'nothing: the answer lists only what the credential holds a privilege on',
  service: 'the table the object named in the body belongs to (one the credential cannot see answers as if it did not exist)',
};

export const ACCESS_TEXT: Record<Access, (needs?: CatalogNeed) => string> = {
  catalog: (needs) =>
    `Needs a credential of the database (\`x-api-key\`, \`Authorization: Bearer <JWT>\`, or \`identity\` in the body) ` +
    `holding \`${needs?.privilege ?? 'describe'}\` on ${ON_TEXT[needs?.on ?? 'database']} (role \`${roleOfPrivilege(needs?.privilege ?? 'describe')}\` ` +
    'or higher, or a grant: docs/access-control.md). An object the credential cannot see answers as if it did not exist. ' +
    "Counted against the database's rate limit (503, code 21, `Retry-After` when exceeded).",
  operator: () => 'Operator key only (`x-api-key: <ADMIN_API_KEY>`); any other valid credential → 403.',
  'database-admin': () => 'The operator key, or an `admin` credential of that database (admin API key, or a token with scope `admin`).',
  metrics: () =>
    'When METRICS_API_KEY is set, the key as `Authorization: Bearer <key>` or `x-api-key` (else 401); otherwise no credential.',
  public: () => 'No credential.',
};

/** The error answers (docs/rest-contract.md §7), one per status, all with the ErrorResponse body. */
export const ERROR_RESPONSES: Record<string, { status: ErrorStatus; description: string; headers?: Record<string, unknown> }> = {
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
export const ERROR_RESPONSE_NAME = new Map(Object.entries(ERROR_RESPONSES).map(([name, r]) => [String(r.status), name]));

export const TAGS = [
  { name: 'Namespace', description: 'Lance Namespace REST: namespaces' },
  { name: 'Table', description: 'Lance Namespace REST: tables in the catalog' },
  { name: 'Table data', description: 'Lance Namespace REST: data operations, served by the gateway' },
  { name: 'Index', description: 'Lance Namespace REST: indexes' },
  { name: 'Transaction', description: 'Lance Namespace REST: long-running operations' },
  { name: 'Enterprise', description: 'Routes of the extended edition (docs/rest-contract.md §4.7)' },
  { name: 'Jobs', description: 'Long operations (backfill_column) kept in the catalog and run by any replica: list, describe, cancel' },
  { name: 'Operator', description: 'Databases (tenants), API keys and the audit trail' },
  { name: 'Events', description: 'Change-event sinks (NATS JetStream, signed webhooks) and their dead letters (docs/events.md)' },
  { name: 'Health', description: 'Liveness and readiness' },
  { name: 'Observability', description: 'Metrics' },
  { name: 'Documentation', description: 'This document' },
];
