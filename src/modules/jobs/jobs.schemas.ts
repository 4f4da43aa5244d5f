import { z } from 'zod';
import { PageQuery } from '../../platform/http/validation/fields';

/** Bodies of /v1/jobs/* (the official remote client sends `{"page_token"?}` and `{"job_id"}`). */
const base = { identity: z.unknown().optional(), context: z.unknown().optional() };

export const ListJobsBody = z.object({ ...base, ...PageQuery.shape }).loose();
export const QueryEventsBody = z
  .object({ ...base, job_id: z.string().nullish(), limit: z.number().int().nullish(), filter: z.string().nullish() })
  .loose();
export const JobIdBody = z
  .object({ ...base, job_id: z.string({ error: 'job_id is required' }).min(1, 'job_id must not be empty') })
  .loose();

const JobState = z
  .enum(['IN_PROGRESS', 'DONE', 'FAILED', 'CANCELLED', 'TIMED_OUT'])
  .describe('IN_PROGRESS (queued or running), DONE, FAILED, CANCELLED, TIMED_OUT (its runners kept dying)');
const JobFailure = z
  .object({
    phase: z.string().describe('where it failed: `run`'),
    message: z.string(),
    retryable: z.boolean().describe('whether submitting it again may succeed'),
  })
  .meta({ id: 'JobFailure' });

export const ListJobsResponse = z
  .object({
    jobs: z.array(
      z.object({
        job_id: z.string(),
        table: z.string().describe('the table name (without its namespace)'),
        table_id: z.array(z.string()).describe('the table identifier (namespace path and name)'),
        job_type: z.string().describe('`backfill_column`'),
        state: JobState,
        created_at_millis: z.number().int(),
        started_at_millis: z
          .number()
          .int()
          .nullable()
          .describe('when its first run started; null while queued or when cancelled before it ran'),
        finished_at_millis: z
          .number()
          .int()
          .nullable()
          .describe('when it ended (DONE, FAILED, CANCELLED, TIMED_OUT); null while in progress'),
        failure: JobFailure.optional().describe('why it failed: set once FAILED or TIMED_OUT (as /v1/jobs/describe tells it)'),
      }),
    ),
    page_token: z.string().optional(),
  })
  .meta({ id: 'ListJobsResponse' });
export type ListJobsResponse = z.infer<typeof ListJobsResponse>;

export const DescribeJobResponse = z
  .object({
    job_id: z.string(),
    job_type: z.string(),
    job_state: JobState,
    creation_ms: z.number().int(),
    started_ms: z.number().int().nullable().describe('when its first run started; null while queued or when cancelled before it ran'),
    finished_ms: z.number().int().nullable().describe('when it ended; null while in progress'),
    spec: z.record(z.string(), z.unknown()).describe('what was asked (table, column, branch)'),
    result: z.record(z.string(), z.unknown()).optional().describe('set once DONE'),
    failure: JobFailure.optional().describe('set once FAILED or TIMED_OUT'),
    attempts: z.number().int().describe('how many runs it took (more than one when a runner was lost)'),
  })
  .meta({ id: 'DescribeJobResponse' });
export type DescribeJobResponse = z.infer<typeof DescribeJobResponse>;

export const JobIdResponse = z.object({ job_id: z.string() }).meta({ id: 'JobIdResponse' });
export type JobIdResponse = z.infer<typeof JobIdResponse>;

export const CancelJobResponse = z
  .object({
    job_id: z.string(),
    job_state: JobState.describe(
      'the state after the request: CANCELLED for a queued job; a running one stays IN_PROGRESS until its runner stops it',
    ),
    cancel_requested: z.boolean(),
  })
  .meta({ id: 'CancelJobResponse' });
export type CancelJobResponse = z.infer<typeof CancelJobResponse>;
