import { z } from 'zod';

/** The answer of DescribeTransaction (the service returns its type; the OpenAPI document shows it). */
export const DescribeTransactionResponse = z
  .object({
    status: z.enum(['Queued', 'Running', 'Succeeded', 'Failed', 'Canceled']),
    properties: z
      .object({
        operation: z.string(),
        created_at: z.string(),
        updated_at: z.string(),
        pending: z.string().describe('number of storage folders still to delete'),
        error: z.string().optional(),
      })
      .describe('details of the long-running operation'),
  })
  .meta({ id: 'DescribeTransactionResponse' });
export type DescribeTransactionResponse = z.infer<typeof DescribeTransactionResponse>;
