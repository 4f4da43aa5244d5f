import { Injectable } from '@nestjs/common';
import { CatalogClient, UnitOfWork } from '../../platform/db/unit-of-work';

/** A job's state in the catalog (the wire shows QUEUED and RUNNING both as IN_PROGRESS). */
export type JobState = 'QUEUED' | 'RUNNING' | 'DONE' | 'FAILED' | 'CANCELLED' | 'TIMED_OUT';

export interface JobFailure {
  phase: string;
  message: string;
  retryable: boolean;
}

export interface JobRow {
  id: string;
  databaseId: string;
  catalog: string;
  tableId: string[];
  jobType: string;
  state: JobState;
  spec: Record<string, unknown>;
  result: Record<string, unknown> | null;
  failure: JobFailure | null;
  cancelRequested: boolean;
  attempts: number;
  owner: string | null;
  leaseExpiresAt: Date | null;
  principal: string;
  requestId: string | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

/** A claimed job, with what its runner needs to act for the database. */
export interface ClaimedJob extends JobRow {
  databaseName: string;
}

export interface NewJob {
  id: string;
  databaseId: string;
  catalog: string;
  tableId: string[];
  jobType: string;
  spec: Record<string, unknown>;
  principal: string;
  requestId: string | null;
  /** Set when the replica taking the request starts the job itself (state RUNNING, leased to it). */
  owner?: string;
  leaseMs?: number;
}

const COLUMNS = `j.id, j.database_id AS "databaseId", j.catalog, j.table_id AS "tableId", j.job_type AS "jobType", j.state,
  j.spec, j.result, j.failure, j.cancel_requested AS "cancelRequested", j.attempts, j.owner,
  j.lease_expires_at AS "leaseExpiresAt", j.principal, j.request_id AS "requestId", j.created_at AS "createdAt",
  j.started_at AS "startedAt", j.finished_at AS "finishedAt"`;

/** jobs: the only place that reads or writes the table (see the migration 20261124000000_jobs). */
@Injectable()
export class JobsRepository {
  constructor(private readonly uow: UnitOfWork) {}

  private get db(): CatalogClient {
    return this.uow.db;
  }

  async insert(j: NewJob): Promise<void> {
    const running = j.owner !== undefined;
    await this.db.$executeRaw`
      INSERT INTO jobs (id, database_id, catalog, table_id, job_type, state, spec, principal, request_id, owner,
                        lease_expires_at, attempts, started_at)
      VALUES (${j.id}::uuid, ${j.databaseId}::uuid, ${j.catalog}, ${j.tableId}::text[], ${j.jobType},
              ${running ? 'RUNNING' : 'QUEUED'}, ${JSON.stringify(j.spec)}::jsonb, ${j.principal}, ${j.requestId},
              ${j.owner ?? null},
              CASE WHEN ${running} THEN now() + ${j.leaseMs ?? 0}::int * interval '1 millisecond' END,
              ${running ? 1 : 0}, CASE WHEN ${running} THEN now() END)`;
  }

  /** One job of a database's catalog; null when there is none (or it belongs to another database or catalog). */
  async find(databaseId: string, catalog: string, id: string): Promise<JobRow | null> {
    const rows = await this.db.$queryRawUnsafe<JobRow[]>(
      `SELECT ${COLUMNS} FROM jobs j WHERE j.id = $1::uuid AND j.database_id = $2::uuid AND j.catalog = $3`,
      id,
      databaseId,
      catalog,
    );
    return rows[0] ?? null;
  }

  /** Any job by id (runners, tests). */
  async get(id: string): Promise<JobRow | null> {
    const rows = await this.db.$queryRawUnsafe<JobRow[]>(`SELECT ${COLUMNS} FROM jobs j WHERE j.id = $1::uuid`, id);
    return rows[0] ?? null;
  }

  /** A database catalog's jobs, newest first, keyset-paginated on (created_at, id). */
  async list(databaseId: string, catalog: string, before: [string, string] | undefined, take: number): Promise<JobRow[]> {
    if (before) {
      return this.db.$queryRawUnsafe<JobRow[]>(
        `SELECT ${COLUMNS} FROM jobs j
          WHERE j.database_id = $1::uuid AND j.catalog = $2 AND (j.created_at, j.id) < ($3::timestamptz, $4::uuid)
          ORDER BY j.created_at DESC, j.id DESC LIMIT $5`,
        databaseId,
        catalog,
        before[0],
        before[1],
        take,
      );
    }
    return this.db.$queryRawUnsafe<JobRow[]>(
      `SELECT ${COLUMNS} FROM jobs j WHERE j.database_id = $1::uuid AND j.catalog = $2
        ORDER BY j.created_at DESC, j.id DESC LIMIT $3`,
      databaseId,
      catalog,
      take,
    );
  }

  /**
   * Cancels a job: a queued one ends CANCELLED at once; a running one is marked cancel_requested (its runner ends it
   * CANCELLED unless it has already committed). Returns the job as it is afterwards; null when it is not the
   * database catalog's. A finished job is left as it is.
   */
  async cancel(databaseId: string, catalog: string, id: string): Promise<JobRow | null> {
    await this.db.$executeRaw`
      UPDATE jobs SET state = CASE WHEN state = 'QUEUED' THEN 'CANCELLED' ELSE state END,
                      finished_at = CASE WHEN state = 'QUEUED' THEN now() ELSE finished_at END,
                      cancel_requested = CASE WHEN state IN ('QUEUED', 'RUNNING') THEN true ELSE cancel_requested END
       WHERE id = ${id}::uuid AND database_id = ${databaseId}::uuid AND catalog = ${catalog}`;
    return this.find(databaseId, catalog, id);
  }

  /**
   * Claims up to `limit` jobs for `owner`: running ones whose lease expired (their runner is gone; a lost one only
   * while it has attempts left: timeOutExhausted ends the others) and queued ones that are due, the earliest due
   * first. FOR UPDATE SKIP LOCKED: replicas claiming at once never take the same job, and a claim never waits on
   * another's. Each claim counts an attempt and leases the job for `leaseMs`.
   *
   * Two ordered index scans that stop at `limit` rows (jobs_queued_due_idx, jobs_claimable_idx), not one scan of every
   * queued job: a fleet's delayed maintenance jobs (one per table) made the single OR'ed query sort and filter all of
   * them, about 650 ms per claim at 10,000 queued (issue 37).
   */
  async claim(owner: string, leaseMs: number, limit: number, maxAttempts: number, maintenanceBudget = 1): Promise<ClaimedJob[]> {
    // A queued job waits for its not_before; a maintenance job (spec.maintenance) waits while its database already
    // runs as many as its budget (databases.maintenance.max_concurrent, else the server's).
    const ids = await this.db.$queryRaw<{ id: string }[]>`
      WITH lost AS (
        SELECT id, COALESCE(not_before, created_at) AS due FROM jobs
         WHERE state = 'RUNNING' AND lease_expires_at < now() AND attempts < ${maxAttempts}
         ORDER BY lease_expires_at LIMIT ${limit}
         FOR UPDATE SKIP LOCKED),
      queued AS (
        SELECT q.id, COALESCE(q.not_before, q.created_at) AS due FROM jobs q
         WHERE q.state = 'QUEUED' AND COALESCE(q.not_before, q.created_at) <= now()
           AND (q.spec ->> 'maintenance' IS NULL OR (
             SELECT count(*) FROM jobs r
              WHERE r.database_id = q.database_id AND r.state = 'RUNNING' AND r.spec ->> 'maintenance' IS NOT NULL
                AND r.lease_expires_at >= now()) < COALESCE(
             (SELECT (d.maintenance ->> 'max_concurrent')::int FROM databases d WHERE d.id = q.database_id), ${maintenanceBudget}::int))
         ORDER BY COALESCE(q.not_before, q.created_at) LIMIT ${limit}
         FOR UPDATE SKIP LOCKED)
      UPDATE jobs j SET state = 'RUNNING', owner = ${owner}, attempts = j.attempts + 1,
                        lease_expires_at = now() + ${leaseMs}::int * interval '1 millisecond',
                        started_at = COALESCE(j.started_at, now())
       WHERE j.id IN (SELECT id FROM (SELECT * FROM lost UNION ALL SELECT * FROM queued) c ORDER BY due LIMIT ${limit})
      RETURNING j.id`;
    if (ids.length === 0) return [];
    return this.db.$queryRawUnsafe<ClaimedJob[]>(
      `SELECT ${COLUMNS}, d.name AS "databaseName" FROM jobs j JOIN databases d ON d.id = j.database_id
        WHERE j.id = ANY($1::uuid[]) ORDER BY j.created_at`,
      ids.map((r) => r.id),
    );
  }

  /**
   * Renews a runner's lease; returns whether it still holds the job and whether a cancel was asked for. `held`
   * false: the job is no longer its own (its lease expired and another replica took it over, or it ended).
   */
  async heartbeat(id: string, owner: string, leaseMs: number): Promise<{ held: boolean; cancelRequested: boolean }> {
    const rows = await this.db.$queryRaw<{ cancelRequested: boolean }[]>`
      UPDATE jobs SET lease_expires_at = now() + ${leaseMs}::int * interval '1 millisecond'
       WHERE id = ${id}::uuid AND owner = ${owner} AND state = 'RUNNING'
      RETURNING cancel_requested AS "cancelRequested"`;
    return rows.length ? { held: true, cancelRequested: rows[0].cancelRequested } : { held: false, cancelRequested: false };
  }

  /** Ends a job its runner holds; false when it no longer held it (nothing changed). */
  async finish(
    id: string,
    owner: string,
    state: Exclude<JobState, 'QUEUED' | 'RUNNING'>,
    outcome: { result?: Record<string, unknown>; failure?: JobFailure },
  ): Promise<boolean> {
    const n = await this.db.$executeRaw`
      UPDATE jobs SET state = ${state}, result = ${outcome.result ? JSON.stringify(outcome.result) : null}::jsonb,
                      failure = ${outcome.failure ? JSON.stringify(outcome.failure) : null}::jsonb,
                      finished_at = now(), lease_expires_at = NULL
       WHERE id = ${id}::uuid AND owner = ${owner} AND state = 'RUNNING'`;
    return n === 1;
  }

  /**
   * Ends, as TIMED_OUT, running jobs whose lease expired after `maxAttempts` runs (their runners keep dying: the job
   * is not tried again). Returns how many.
   */
  async timeOutExhausted(maxAttempts: number): Promise<number> {
    return this.db.$executeRaw`
      UPDATE jobs SET state = 'TIMED_OUT', finished_at = now(), lease_expires_at = NULL,
                      failure = jsonb_build_object('phase', 'run', 'retryable', true,
                        'message', 'the job lost its runner ' || attempts || ' times (replicas stopped or crashed while running it)')
       WHERE state = 'RUNNING' AND lease_expires_at < now() AND attempts >= ${maxAttempts}`;
  }

  /** Deletes jobs that ended more than `days` days ago; returns how many. */
  async deleteEndedBefore(days: number): Promise<number> {
    return this.db.$executeRaw`
      DELETE FROM jobs WHERE state IN ('DONE', 'FAILED', 'CANCELLED', 'TIMED_OUT')
         AND finished_at < now() - ${days}::int * interval '1 day'`;
  }
}
