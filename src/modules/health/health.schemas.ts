import { z } from 'zod';

/** The answers of the liveness and readiness probes. */
export const LivenessResponse = z.object({ status: z.literal('ok') }).meta({ id: 'LivenessResponse' });
export type LivenessResponse = z.infer<typeof LivenessResponse>;
export const ReadinessResponse = z
  .object({
    status: z.literal('ready'),
    catalog: z.literal('up'),
    storage: z.literal('up').describe("every storage profile's store answers"),
    redis: z
      .enum(['ready', 'down', 'none'])
      .describe('state of the Redis connection: `ready`, `down`, or `none` without REDIS_URL (does not affect readiness)'),
  })
  .meta({ id: 'ReadinessResponse' });
export type ReadinessResponse = z.infer<typeof ReadinessResponse>;

export const OperatorHealthReport = z
  .object({
    catalog: z.object({
      status: z.enum(['up', 'down']).describe('whether the catalog database answered a query in time'),
      latency_ms: z.number().describe('how long it took to answer (or to fail)'),
      error: z.string().optional().describe('what went wrong, when down (never a credential)'),
    }),
    redis: z.object({
      status: z
        .enum(['ready', 'down', 'none'])
        .describe('state of the Redis connection: `ready`, `down` (rate limiting degraded), or `none` without REDIS_URL'),
    }),
    storage_profiles: z
      .array(
        z.object({
          name: z.string().describe('storage profile name (`default` for STORAGE_ROOT)'),
          status: z.enum(['up', 'down']).describe("whether the profile's store answered a listing in time"),
          error: z.string().optional().describe('what went wrong, when down (never a credential)'),
        }),
      )
      .describe('every storage profile, by name'),
    checked_at: z.string().describe('when the checks were made (RFC 3339)'),
  })
  .meta({ id: 'OperatorHealthReport' });
export type OperatorHealthReport = z.infer<typeof OperatorHealthReport>;
