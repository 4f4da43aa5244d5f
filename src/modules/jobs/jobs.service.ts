import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../../platform/config/config';
import { Errors } from '../../platform/http/errors';
import { paginate } from '../../platform/http/pagination';
import { isUuid, PageRequest } from '../../platform/http/validation/fields';
import { UnitOfWork } from '../../platform/db/unit-of-work';
import { AuditContext, AuditService } from '../audit';
import { ReplicaIdentity } from '../../platform/cluster/replica-identity';
import { requireOn, TenantContext } from '../identity';
import { ClaimedJob, JobRow, JobsRepository } from './jobs.repository';
import type { CancelJobResponse, DescribeJobResponse, ListJobsResponse } from './jobs.schemas';

/** Thrown inside a job when a cancel was asked for before it committed: the job ends CANCELLED. */
export class JobCancelled extends Error {
  constructor() {
    super('cancelled');
  }
}

/** What a running job may ask of its runner. */
export interface JobRunContext {
  /** The job's database catalog, acting as the principal that submitted it. */
  tenant: TenantContext;
  /**
   * Asks the catalog whether the job may still commit: throws JobCancelled when a cancel was asked for, and fails
   * when the job is no longer this runner's (its lease lapsed and another replica took it over). Call it right
   * before the engine commits.
   */
  beforeCommit(): Promise<void>;
}

/** How a job type runs: `run` returns its result (kept as the job's `result`); errors fail the job. */
export type JobExecutor = (job: ClaimedJob, ctx: JobRunContext) => Promise<Record<string, unknown>>;

/** The wire state of a catalog state: queued and running are both IN_PROGRESS to the client. */
const wireState = (s: JobRow['state']) => (s === 'QUEUED' || s === 'RUNNING' ? 'IN_PROGRESS' : s);

/** A job page token: [ISO timestamp, job uuid] of the last job of the previous page. */
const isJobKey = (v: unknown): v is [string, string] =>
  Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && !Number.isNaN(Date.parse(v[0])) && isUuid(v[1]);

/**
 * Jobs: long operations kept in the catalog (submit, list, describe, cancel), per database and catalog prefix. A job
 * of another database is a 404, as is an id that names no job. Job types are registered by the modules that run them
 * (`register`), so this module needs none of theirs.
 */
@Injectable()
export class JobsService {
  private readonly executors = new Map<string, JobExecutor>();
  /** Set by JobRunner: runs a job this replica has just made and owns (with `work` instead of its executor). */
  private startHere?: (job: ClaimedJob, work?: () => Promise<Record<string, unknown>>) => void;
  private wake?: () => void;
  /** Whether this replica's runner may start one more job now (it claims jobs and has a free slot). */
  private hasRoom: () => boolean = () => false;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repo: JobsRepository,
    private readonly uow: UnitOfWork,
    private readonly audit: AuditService,
    private readonly replica: ReplicaIdentity,
  ) {}

  register(jobType: string, executor: JobExecutor): void {
    this.executors.set(jobType, executor);
  }

  executorOf(jobType: string): JobExecutor | undefined {
    return this.executors.get(jobType);
  }

  /** @internal JobRunner's hooks. */
  attachRunner(
    hasRoom: () => boolean,
    startHere: (job: ClaimedJob, work?: () => Promise<Record<string, unknown>>) => void,
    wake: () => void,
  ): void {
    this.hasRoom = hasRoom;
    this.startHere = startHere;
    this.wake = wake;
  }

  /**
   * Records work this replica has already started (a drop's storage clean-up that outlasts its request) as a job it
   * runs, leased to it: `work` is awaited for its result. Should this replica die first, another takes the job over
   * and runs the job type's executor. Answers the job id.
   */
  async adopt(
    t: TenantContext,
    tableId: string[],
    jobType: string,
    spec: Record<string, unknown>,
    work: () => Promise<Record<string, unknown>>,
  ): Promise<string> {
    if (!this.executors.has(jobType)) throw new Error(`no executor for job type ${jobType}`);
    if (!this.startHere) throw new Error('no job runner');
    const id = randomUUID();
    await this.repo.insert(this.newJob(id, t, tableId, jobType, spec, true));
    const job = await this.repo.get(id);
    if (job) this.startHere({ ...job, databaseName: t.database.name }, work);
    return id;
  }

  /**
   * Records a job (with the request's audit record, in one transaction) and answers its id. A replica that runs
   * jobs and has a free slot starts it at once, leased to itself; otherwise it waits, queued, for a replica that does.
   */
  async submit(
    t: TenantContext,
    tableId: string[],
    jobType: string,
    spec: Record<string, unknown>,
    opts: { queue?: boolean } = {},
  ): Promise<string> {
    if (!this.executors.has(jobType)) throw new Error(`no executor for job type ${jobType}`);
    const id = randomUUID();
    // `queue`: always through the runners' claim (which applies its budgets), never started here at once.
    const runHere = !opts.queue && this.hasRoom();
    const values = this.newJob(id, t, tableId, jobType, spec, runHere);
    await this.uow.run(async () => {
      await this.repo.insert(values);
      await this.audit.recordWithChange({ details: { job_id: id, job_type: jobType } });
    });
    if (runHere) {
      const job = await this.repo.get(id);
      if (job) this.startHere!({ ...job, databaseName: t.database.name });
    } else {
      this.wake?.();
    }
    return id;
  }

  /** A job's row: of the request's database and prefix, leased to this replica when it runs here. */
  private newJob(id: string, t: TenantContext, tableId: string[], jobType: string, spec: Record<string, unknown>, runHere: boolean) {
    return {
      id,
      databaseId: t.database.id,
      catalog: t.catalog,
      tableId,
      jobType,
      spec,
      principal: t.principal,
      requestId: t.requestId ?? null,
      ...(runHere ? { owner: this.replica.id, leaseMs: this.config.jobs.leaseMs } : {}),
    };
  }

  async list(t: TenantContext, page: PageRequest): Promise<ListJobsResponse> {
    const { rows, ...next } = await paginate(page, this.config, {
      isKey: isJobKey,
      fetch: (before, take) => this.repo.list(t.database.id, t.catalog, before, take),
      keyOf: (r: JobRow): [string, string] => [r.createdAt.toISOString(), r.id],
      // A scoped credential sees the jobs of the tables it can see (filtered before the page is cut).
      keep: t.access.unscoped ? undefined : async (rows) => rows.filter((r) => t.access.may('describe', 'table', r.tableId)),
    });
    return {
      jobs: rows.map((r) => ({
        job_id: r.id,
        table: r.tableId[r.tableId.length - 1] ?? '',
        table_id: r.tableId,
        job_type: r.jobType,
        state: wireState(r.state),
        created_at_millis: r.createdAt.getTime(),
        started_at_millis: r.startedAt?.getTime() ?? null,
        finished_at_millis: r.finishedAt?.getTime() ?? null,
        ...(r.failure ? { failure: r.failure } : {}),
      })),
      ...next,
    };
  }

  async describe(t: TenantContext, jobId: string): Promise<DescribeJobResponse> {
    const r = await this.find(t, jobId);
    requireOn(t, 'describe', 'table', r.tableId, { hidden: () => this.notFound(jobId) });
    return {
      job_id: r.id,
      job_type: r.jobType,
      job_state: wireState(r.state),
      creation_ms: r.createdAt.getTime(),
      started_ms: r.startedAt?.getTime() ?? null,
      finished_ms: r.finishedAt?.getTime() ?? null,
      spec: r.spec,
      ...(r.result ? { result: r.result } : {}),
      ...(r.failure ? { failure: r.failure } : {}),
      attempts: r.attempts,
    };
  }

  /**
   * Cancels a job of the caller's database: a queued one ends CANCELLED at once; a running one is asked to stop and
   * does so before its engine commit (once committed it ends DONE). A finished job is left as it is (no error).
   */
  async cancel(t: TenantContext, jobId: string): Promise<CancelJobResponse> {
    if (!isUuid(jobId)) throw this.notFound(jobId);
    const pending = AuditContext.pending();
    if (pending) pending.entry.target = `job ${jobId}`;
    const r = await this.uow.run(async () => {
      const before = await this.repo.find(t.database.id, t.catalog, jobId);
      if (!before) return null;
      requireOn(t, 'manage', 'table', before.tableId, { hidden: () => this.notFound(jobId) });
      const after = await this.repo.cancel(t.database.id, t.catalog, jobId);
      if (before.state === 'QUEUED' || before.state === 'RUNNING') {
        await this.audit.recordWithChange({
          details: {
            job_id: jobId,
            job_type: before.jobType,
            state_before: wireState(before.state),
            state: after && wireState(after.state),
          },
        });
      } else {
        this.audit.nothingChanged();
      }
      return after;
    });
    if (!r) throw this.notFound(jobId);
    return { job_id: r.id, job_state: wireState(r.state), cancel_requested: r.cancelRequested };
  }

  private async find(t: TenantContext, jobId: string): Promise<JobRow> {
    const r = isUuid(jobId) ? await this.repo.find(t.database.id, t.catalog, jobId) : null;
    if (!r) throw this.notFound(jobId);
    return r;
  }

  private notFound(jobId: string) {
    return Errors.notFound(`job '${jobId}' not found`);
  }
}
