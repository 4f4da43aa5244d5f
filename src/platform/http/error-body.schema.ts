import { z } from 'zod';

/** The error body of every 4xx/5xx answer (docs/rest-contract.md §7), as the OpenAPI document shows it. */
export const ErrorResponse = z
  .object({
    type: z.string().describe('problem type, e.g. `/errors/not-found-error` (docs/rest-contract.md §7)'),
    title: z.string().describe('short, fixed summary of the problem type'),
    status: z.number().int().describe('the HTTP status, repeated'),
    detail: z.string().describe('what went wrong, for humans'),
    instance: z.string().describe('the request id (the `x-request-id` response header)'),
    code: z
      .number()
      .int()
      .min(0)
      .describe(
        'Lance Namespace error code (what the official clients use to pick their error type): 0 Unsupported, ' +
          '1 NamespaceNotFound, 2 NamespaceAlreadyExists, 3 NamespaceNotEmpty, 4 TableNotFound, 5 TableAlreadyExists, ' +
          '6 TableIndexNotFound, 7 TableIndexAlreadyExists, 8 TableTagNotFound, 9 TableTagAlreadyExists, 10 TransactionNotFound, 11 TableVersionNotFound, ' +
          '12 TableColumnNotFound, 13 InvalidInput, 14 ConcurrentModification, 15 PermissionDenied, 16 Unauthenticated, ' +
          '17 ServiceUnavailable, 18 Internal, 19 InvalidTableState, 20 TableSchemaValidationError, 21 Throttling, ' +
          '22 TableBranchNotFound, 23 TableBranchAlreadyExists',
      ),
    error: z.string().describe('the same message as `detail` (the Lance Namespace ErrorResponse field)'),
  })
  .describe("Error body of every 4xx/5xx answer: the problem-details fields of docs/rest-contract.md §7 plus the spec's `code` and `error`")
  .meta({ id: 'ErrorResponse' });
export type ErrorResponse = z.infer<typeof ErrorResponse>;
