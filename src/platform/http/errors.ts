/**
 * The error model of the REST contract. Every failure the gateway reports is an ApiError carrying the Lance
 * Namespace `ErrorResponse.code` (what the official clients use to pick their error type) and the HTTP status
 * (what the table in docs/rest-contract.md §7 prescribes). The global filter (http-exception.filter.ts) is the only place that
 * turns errors into response bodies.
 */
export enum ErrorCode {
  Unsupported = 0,
  NamespaceNotFound = 1,
  NamespaceAlreadyExists = 2,
  NamespaceNotEmpty = 3,
  TableNotFound = 4,
  TableAlreadyExists = 5,
  TableIndexNotFound = 6,
  TableIndexAlreadyExists = 7,
  TableTagNotFound = 8,
  TableTagAlreadyExists = 9,
  TransactionNotFound = 10,
  TableVersionNotFound = 11,
  TableColumnNotFound = 12,
  InvalidInput = 13,
  ConcurrentModification = 14,
  PermissionDenied = 15,
  Unauthenticated = 16,
  ServiceUnavailable = 17,
  Internal = 18,
  InvalidTableState = 19,
  TableSchemaValidationError = 20,
  Throttling = 21,
  TableBranchNotFound = 22,
  TableBranchAlreadyExists = 23,
}

/**
 * Why a request was refused (docs/access-control.md): kept with the error for the audit trail, never sent to the
 * caller (whose answer may be a plain "not found").
 */
export interface Refusal {
  databaseId: string;
  databaseName: string;
  /** `key:<id>` or `token:<sub>`, never a secret. */
  actor: string;
  /** The route's handler. */
  operation: string;
  /** What was touched, as `table a$b`, `namespace a`, or `database`. */
  target: string;
  reason: string;
}

export class ApiError extends Error {
  /** Set on a refused request: what the audit trail records of it. */
  refusal?: Refusal;

  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** Factories for the errors the services raise, so status/code pairs are chosen in one place. */
export const Errors = {
  invalidInput: (msg: string) => new ApiError(400, ErrorCode.InvalidInput, msg),
  unauthenticated: (msg: string) => new ApiError(401, ErrorCode.Unauthenticated, msg, { 'WWW-Authenticate': 'Bearer' }),
  permissionDenied: (msg: string) => new ApiError(403, ErrorCode.PermissionDenied, msg),
  unsupported: (msg: string) => new ApiError(406, ErrorCode.Unsupported, msg),
  namespaceNotFound: (id: string) => new ApiError(404, ErrorCode.NamespaceNotFound, id),
  namespaceAlreadyExists: (id: string) => new ApiError(409, ErrorCode.NamespaceAlreadyExists, id),
  namespaceNotEmpty: (msg: string) => new ApiError(409, ErrorCode.NamespaceNotEmpty, msg),
  tableNotFound: (id: string) => new ApiError(404, ErrorCode.TableNotFound, id),
  tableAlreadyExists: (id: string) => new ApiError(409, ErrorCode.TableAlreadyExists, id),
  transactionNotFound: (id: string) => new ApiError(404, ErrorCode.TransactionNotFound, id),
  tableVersionNotFound: (msg: string) => new ApiError(404, ErrorCode.TableVersionNotFound, msg),
  branchNotFound: (msg: string) => new ApiError(404, ErrorCode.TableBranchNotFound, msg),
  branchAlreadyExists: (msg: string) => new ApiError(409, ErrorCode.TableBranchAlreadyExists, msg),
  tagNotFound: (msg: string) => new ApiError(404, ErrorCode.TableTagNotFound, msg),
  tagAlreadyExists: (msg: string) => new ApiError(409, ErrorCode.TableTagAlreadyExists, msg),
  /** The table's state forbids the change (e.g. a branch that tags still point into); retrying will not help. */
  invalidTableState: (msg: string) => new ApiError(409, ErrorCode.InvalidTableState, msg),
  concurrentModification: (msg: string) => new ApiError(409, ErrorCode.ConcurrentModification, msg),
  /** Busy, not broken: the client should retry after `retryAfterS` seconds (the official clients retry 503). */
  slowDown: (msg: string, retryAfterS = 1) =>
    new ApiError(503, ErrorCode.Throttling, `Slow down: ${msg}`, { 'Retry-After': String(retryAfterS) }),
  serviceUnavailable: (msg: string) => new ApiError(503, ErrorCode.ServiceUnavailable, msg),
  notFound: (msg: string) => new ApiError(404, ErrorCode.Unsupported, msg),
  conflict: (msg: string) => new ApiError(409, ErrorCode.ConcurrentModification, msg),
  unsupportedMediaType: (msg: string) => new ApiError(415, ErrorCode.InvalidInput, msg),
  payloadTooLarge: (msg: string) => new ApiError(413, ErrorCode.InvalidInput, msg),
  /** An Idempotency-Key (or a repeated x-request-id) sent again with another route or body. */
  idempotencyMismatch: (msg: string) => new ApiError(422, ErrorCode.InvalidInput, msg),
  uriTooLong: (msg: string) => new ApiError(414, ErrorCode.InvalidInput, msg),
  /** The path is served, but not for this method. */
  methodNotAllowed: (method: string, allow: string[]) =>
    new ApiError(405, ErrorCode.Unsupported, `${method} is not served for this path; it is served for ${allow.join(', ')}`, {
      Allow: allow.join(', '),
    }),
  indexNotFound: (msg: string) => new ApiError(404, ErrorCode.TableIndexNotFound, msg),
  indexAlreadyExists: (msg: string) => new ApiError(409, ErrorCode.TableIndexAlreadyExists, msg),
  columnNotFound: (msg: string) => new ApiError(404, ErrorCode.TableColumnNotFound, msg),
  schemaValidation: (msg: string) => new ApiError(400, ErrorCode.TableSchemaValidationError, msg),
  /** The official remote client recognises an existing table only by a 400 whose body says 'already exists'. */
  tableAlreadyExistsRemote: (id: string) => new ApiError(400, ErrorCode.TableAlreadyExists, `Table '${id}' already exists`),
};

/** docs/rest-contract.md §7: the problem-details `type` and `title` for each status. */
const PROBLEM: Record<number, { type: string; title: string }> = {
  400: { type: '/errors/bad-request', title: 'Malformed request' },
  401: { type: '/errors/unauthorized-request', title: 'No valid authentication credentials for the operation' },
  403: { type: '/errors/forbidden-request', title: 'Not authorized to make this request' },
  404: { type: '/errors/not-found-error', title: 'Not found Error' },
  406: { type: '/errors/unsupported-operation', title: 'The server does not support this operation' },
  // Statuses the §7 table does not name: its types, with the HTTP meaning as title.
  405: { type: '/errors/unsupported-operation', title: 'Method not allowed' },
  408: { type: '/errors/bad-request', title: 'Request timeout' },
  413: { type: '/errors/bad-request', title: 'Payload too large' },
  414: { type: '/errors/bad-request', title: 'URI too long' },
  415: { type: '/errors/bad-request', title: 'Unsupported media type' },
  422: { type: '/errors/bad-request', title: 'Idempotency key reused for another request' },
  431: { type: '/errors/bad-request', title: 'Request header fields too large' },
  409: { type: '/errors/conflict', title: 'The namespace has been concurrently modified' },
  503: { type: '/errors/service-unavailable', title: 'Slow down' },
  500: { type: '/errors/server-error', title: 'Internal Server Error' },
};

/** Code used when a non-ApiError (framework rejection, unknown route, …) is reported with a given status. */
export function codeForStatus(status: number): ErrorCode {
  switch (status) {
    case 401:
      return ErrorCode.Unauthenticated;
    case 403:
      return ErrorCode.PermissionDenied;
    case 404:
    case 405:
    case 406:
      return ErrorCode.Unsupported;
    case 409:
      return ErrorCode.ConcurrentModification;
    case 429:
      return ErrorCode.Throttling;
    case 503:
      return ErrorCode.ServiceUnavailable;
    default:
      return status >= 500 ? ErrorCode.Internal : ErrorCode.InvalidInput;
  }
}

export interface ErrorBody {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  code: number;
  error: string;
}

export function errorBody(status: number, code: ErrorCode, message: string, instance: string): ErrorBody {
  const p = PROBLEM[status] ?? (status >= 500 ? PROBLEM[500] : PROBLEM[400]);
  return { type: p.type, title: p.title, status, detail: message, instance, code, error: message };
}
