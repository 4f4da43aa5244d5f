import { Access } from '../identity';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../../platform/config/config';
import { ApiError, Errors } from '../../platform/http/errors';
import { displayId } from '../../platform/http/ids';
import { AuditContext, pendingAudit } from '../audit';
import { ReplicaIdentity } from '../../platform/cluster/replica-identity';
import { heartbeat, LeasedWorker } from '../../platform/cluster/leased-worker';
import { ClaimedJob, JobFailure, JobsRepository } from './jobs.repository';
import { JobCancelled, JobsService } from './jobs.service';

/** How often a runner deletes jobs that ended more than JOBS_RETENTION_DAYS ago (and at its first round). */
const PURGE_EVERY_MS = 60_000;

/**
 * The job runner, on every replica whose JOBS_POLL_INTERVAL_MS is not 0. Jobs live only in the catalog: every
 * interval (and when this replica queues one) it claims, through Postgres (FOR UPDATE SKIP LOCKED), queued jobs and
 * running ones whose lease expired (their replica stopped or died), up to JOBS_CONCURRENCY at a time, and runs them.
 * While a job runs its lease is renewed every third of JOBS_LEASE_SECONDS; a job whose lease lapsed JOBS_MAX_ATTEMPTS
 * times ends TIMED_OUT. A job ends DONE (its result), FAILED (why), or CANCELLED (a cancel seen before its commit);
 * JOBS_RETENTION_DAYS after it ended it is deleted.
 */
@Injectable()
export class JobRunner implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly log = new Logger('Jobs');
  /** The claiming rounds: a call while one runs gets one more after it (a job queued meanwhile is not left waiting). */
  private readonly worker = new LeasedWorker<void>({
    log: this.log,
    failure: 'job round failed',
    result: () => undefined,
    tick: () => this.round(),
    overlap: 'rerun',
  });
  private readonly running = new Map<string, Promise<void>>();
  private lastPurge = 0;
  /**
   * When this replica last ended exhausted jobs (TIMED_OUT). Once per lease at most: such a job's lease has to run out
   * first anyway, and every claiming round (one a second by default) used to run the UPDATE.
   */
  private lastTimeOutSweep = 0;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repo: JobsRepository,
    private readonly jobs: JobsService,
    private readonly replica: ReplicaIdentity,
  ) {}

  get enabled(): boolean {
    return this.config.jobs.pollIntervalMs > 0 && this.config.jobs.concurrency > 0;
  }

  onApplicationBootstrap(): void {
    this.jobs.attachRunner(
      () => this.enabled && !this.worker.stopped && this.running.size < this.config.jobs.concurrency,
      (job, work) => this.start(job, work),
      () => void this.poll(),
    );
    if (this.enabled) this.worker.start(this.config.jobs.pollIntervalMs, true);
  }

  /**
   * Stops claiming and waits for the jobs under way here. A job cut off by a crash instead is taken over by another
   * replica once its lease expires.
   */
  async onApplicationShutdown(): Promise<void> {
    await this.worker.stop();
    await Promise.allSettled([...this.running.values()]);
  }

  /** One claiming round (a round under way is not doubled: it runs once more after). */
  poll(): Promise<void> {
    if (!this.enabled) return Promise.resolve();
    return this.worker.runOnce();
  }

  private async round(): Promise<void> {
    if (this.config.jobs.retentionDays > 0 && Date.now() - this.lastPurge >= PURGE_EVERY_MS) {
      this.lastPurge = Date.now();
      await this.repo.deleteEndedBefore(this.config.jobs.retentionDays);
    }
    if (Date.now() - this.lastTimeOutSweep >= this.config.jobs.leaseMs) {
      this.lastTimeOutSweep = Date.now();
      const timedOut = await this.repo.timeOutExhausted(this.config.jobs.maxAttempts);
      if (timedOut) this.log.warn(`${timedOut} job(s) ended TIMED_OUT: their runners were lost ${this.config.jobs.maxAttempts} times`);
    }
    const free = this.config.jobs.concurrency - this.running.size;
    if (free <= 0 || this.worker.stopped) return;
    for (const job of await this.repo.claim(
      this.replica.id,
      this.config.jobs.leaseMs,
      free,
      this.config.jobs.maxAttempts,
      this.config.maintenance.maxConcurrentPerDatabase,
    )) {
      if (job.attempts > 1)
        this.log.warn(`took over job ${job.id} (${job.jobType}, run ${job.attempts}): its runner ${job.owner ?? ''} was lost`);
      this.start(job);
    }
  }

  /** Runs a job this replica holds (claimed, or made by it), in the background. */
  private start(job: ClaimedJob, work?: () => Promise<Record<string, unknown>>): void {
    if (this.running.has(job.id)) return;
    const p = this.run(job, work).finally(() => {
      this.running.delete(job.id);
      // A slot is free: there may be more waiting.
      if (!this.worker.stopped) void this.poll();
    });
    this.running.set(job.id, p);
  }

  private async run(job: ClaimedJob, work?: () => Promise<Record<string, unknown>>): Promise<void> {
    const owner = this.replica.id;
    const leaseMs = this.config.jobs.leaseMs;
    let lost = false;
    let cancelRequested = job.cancelRequested;
    let stoppedForCancel = false;
    const beat = async () => {
      try {
        const h = await this.repo.heartbeat(job.id, owner, leaseMs);
        if (!h.held) lost = true;
        cancelRequested ||= h.cancelRequested;
      } catch (err) {
        this.log.warn(`could not renew the lease of job ${job.id}: ${(err as Error).message}`);
      }
    };
    const lease = heartbeat(beat, Math.max(50, Math.floor(leaseMs / 3)));
    const ctx = {
      tenant: {
        database: { id: job.databaseId, name: job.databaseName, rateLimit: null },
        catalog: job.catalog,
        role: 'write' as const,
        access: Access.of('write'),
        principal: job.principal,
        requestId: job.requestId ?? undefined,
      },
      beforeCommit: async () => {
        await beat();
        if (lost) throw Errors.serviceUnavailable(`job ${job.id} was taken over by another replica`);
        if (cancelRequested) {
          // Remembered here: layers between this and the runner (the engine's error translation) may wrap the error.
          stoppedForCancel = true;
          throw new JobCancelled();
        }
      },
    };
    try {
      const executor = this.jobs.executorOf(job.jobType);
      if (!executor) throw Errors.unsupported(`this gateway cannot run jobs of type '${job.jobType}'`);
      if (cancelRequested) throw new JobCancelled();
      // The job's engine commit is audited as the job's own change (AuditService.beforeCommit reads this context).
      const audit = pendingAudit({
        databaseId: job.databaseId,
        databaseName: job.databaseName,
        actor: job.principal,
        action: `job.${job.jobType}`,
        target: `${job.catalog ? `${job.catalog}:` : ''}${displayId(job.tableId)}`,
        details: { job_id: job.id, attempt: job.attempts },
        requestId: job.requestId ?? undefined,
      });
      const result = await AuditContext.run(audit, () => (work ? work() : executor(job, ctx)));
      await this.end(job, 'DONE', { result }, lost);
    } catch (err) {
      if (err instanceof JobCancelled || stoppedForCancel) {
        await this.end(job, 'CANCELLED', {}, lost);
      } else {
        const failure = failureOf(err);
        if (!(err instanceof ApiError && err.status < 500)) this.log.warn(`job ${job.id} (${job.jobType}) failed: ${failure.message}`);
        await this.end(job, 'FAILED', { failure }, lost);
      }
    } finally {
      lease.stop();
    }
  }

  private async end(
    job: ClaimedJob,
    state: 'DONE' | 'FAILED' | 'CANCELLED',
    outcome: { result?: Record<string, unknown>; failure?: JobFailure },
    lost: boolean,
  ) {
    try {
      const ended = await this.repo.finish(job.id, this.replica.id, state, outcome);
      if (!ended)
        this.log.warn(
          `job ${job.id} ended ${state} here, but it was no longer this replica's${lost ? ' (taken over)' : ''}: left as the catalog has it`,
        );
    } catch (err) {
      // Its lease lapses and another replica runs it again.
      this.log.warn(`could not record the end of job ${job.id}: ${(err as Error).message}`);
    }
  }
}

/** Why a job failed, for its `failure`: the caller's mistake (4xx) is not worth retrying; anything else may be. */
function failureOf(err: unknown): JobFailure {
  if (err instanceof ApiError) return { phase: 'run', message: err.message, retryable: err.status >= 500 };
  return { phase: 'run', message: err instanceof Error ? err.message : String(err), retryable: true };
}
