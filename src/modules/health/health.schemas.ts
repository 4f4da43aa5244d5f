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
