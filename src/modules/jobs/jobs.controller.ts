import { Controller, Post } from '@nestjs/common';
import { Errors } from '../../platform/http/errors';
import { z } from 'zod';
import { ValidBody } from '../../platform/http/validation/zod-validation.pipe';
import { Audited } from '../audit';
import { CATALOG_ERRORS, Operation } from '../../platform/http/operation.decorator';
import { QueryEventsBody, CancelJobResponse, DescribeJobResponse, JobIdBody, ListJobsBody, ListJobsResponse } from './jobs.schemas';
import { Tenant, TenantContext } from '../identity';
import { JobsService } from './jobs.service';

/**
 * The jobs of the caller's database (the official remote client's `/v1/jobs/*`): list and describe with a read
 * credential, cancel with a write one. A job of another database (or catalog prefix) is a 404, as the client expects
 * of a job that does not exist (describe answers None, cancel false).
 */
@Controller('v1/jobs')
export class JobsController {
  constructor(private readonly jobs: JobsService) {}

  @Post('list')
  @Operation({
    operationId: 'ListJobs',
    summary: 'List the jobs of the database',
    description: 'Newest first, keyset-paginated (`limit`, `page_token`).',
    tag: 'Jobs',
    access: 'catalog',
    needs: { privilege: 'describe', on: 'listing' },
    responses: { 200: { description: 'The jobs', schema: ListJobsResponse } },
    errors: CATALOG_ERRORS,
  })
  list(@Tenant() t: TenantContext, @ValidBody(ListJobsBody) body: z.output<typeof ListJobsBody>) {
    return this.jobs.list(t, body);
  }

  @Post('describe')
  @Operation({
    operationId: 'DescribeJob',
    summary: 'Describe a job',
    description: 'Its state, specification, and once it ended its result or failure; 404 when the database has no such job.',
    tag: 'Jobs',
    access: 'catalog',
    needs: { privilege: 'describe', on: 'service' },
    responses: { 200: { description: 'The job', schema: DescribeJobResponse } },
    errors: CATALOG_ERRORS,
  })
  describe(@Tenant() t: TenantContext, @ValidBody(JobIdBody) body: z.output<typeof JobIdBody>) {
    return this.jobs.describe(t, body.job_id);
  }

  @Post('cancel')
  @Operation({
    operationId: 'CancelJob',
    summary: 'Cancel a job',
    description:
      'A queued job ends CANCELLED at once; a running one stops before its engine commit (and ends CANCELLED), or ' +
      'ends DONE if it had already committed. Cancelling a finished job changes nothing. 404 when the database has no such job.',
    tag: 'Jobs',
    access: 'catalog',
    needs: { privilege: 'manage', on: 'service' },
    responses: { 200: { description: 'The job after the request', schema: CancelJobResponse } },
    errors: CATALOG_ERRORS,
  })
  @Audited('job.cancel')
  cancel(@Tenant() t: TenantContext, @ValidBody(JobIdBody) body: z.output<typeof JobIdBody>) {
    return this.jobs.cancel(t, body.job_id);
  }

  @Post('query_events')
  @Operation({
    operationId: 'QueryJobEvents',
    summary: "A job's event history (not supported)",
    description:
      'Not supported: a job keeps its state, attempts, result and failure (describe), not a history of events. ' +
      "Answers 406 (code 0), so the client's `Job.events()` says so instead of failing on an unknown route.",
    tag: 'Jobs',
    access: 'catalog',
    needs: { privilege: 'describe', on: 'listing' },
    responses: { 200: { description: 'Never answered (406)', schema: z.object({}) } },
    errors: [400, 401, 403, 406, 503, '5XX'],
  })
  queryEvents(@ValidBody(QueryEventsBody) _body: z.output<typeof QueryEventsBody>): Record<string, never> {
    throw Errors.unsupported(
      'job events are not recorded by this gateway; describe the job (/v1/jobs/describe) for its state, result and failure',
    );
  }
}
