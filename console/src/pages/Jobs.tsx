import { useEffect, useState } from 'preact/hooks';
import { problemText } from '../api';
import type { components } from '../../generated/api';
import { type Db, can } from '../db';
import { when } from '../format';
import { Pager, usePages } from './Pager';
import { Problem } from '../problem';

type Job = components['schemas']['ListJobsResponse']['jobs'][number];
type Described = components['schemas']['DescribeJobResponse'];

const STATE: Record<string, string> = {
  IN_PROGRESS: 'in progress',
  DONE: 'done',
  FAILED: 'failed',
  CANCELLED: 'cancelled',
  TIMED_OUT: 'timed out',
};
const stateText = (s: string) => STATE[s] ?? s;
const millis = (ms: number) => when(new Date(ms).toISOString());
/** A time that may not have come yet (a job not started or not ended): empty then. */
const maybeMillis = (ms: number | null | undefined) => (ms == null ? '' : millis(ms));
/** A JSON value as one line of text, long ones abbreviated. */
export const jsonText = (v: unknown, max = 160) => {
  const text = typeof v === 'string' ? v : (JSON.stringify(v) ?? '');
  return text.length > max ? `${text.slice(0, max)}…` : text;
};

/**
 * The database's jobs (`POST /v1/jobs/list`, newest first, server-side pages of 50): kind, table, state, when it was
 * created, started and ended, and why it failed (all from the list; the gateway reports no progress within a job);
 * a job's details (`/v1/jobs/describe`: attempts, what was asked, result or failure); cancelling a job in progress,
 * confirmed on the page, offered only to a credential that may (`manage`).
 */
export function Jobs({ db }: { db: Db }) {
  const pages = usePages();
  const [jobs, setJobs] = useState<{ jobs: Job[]; next?: string }>();
  const [error, setError] = useState('');
  const [status, setStatus] = useState('');
  const [reload, setReload] = useState(0);
  const [shown, setShown] = useState<string>();
  const [confirming, setConfirming] = useState<string>();
  const mayCancel = can(db, 'manage');

  useEffect(() => {
    let live = true;
    db.api
      .POST('/v1/jobs/list', { body: { limit: 50, page_token: pages.token } })
      .then((r) => {
        if (!live) return;
        if (r.error) return setError(problemText(r.error, r.response));
        setError('');
        setJobs({ jobs: r.data.jobs, next: r.data.page_token });
      })
      .catch((err: unknown) => live && setError(problemText(err)));
    return () => {
      live = false;
    };
  }, [db, pages.token, reload]);

  const cancel = async (id: string) => {
    setConfirming(undefined);
    setStatus('');
    const r = await db.api.POST('/v1/jobs/cancel', { body: { job_id: id } });
    if (r.error) return setError(problemText(r.error, r.response));
    setError('');
    setStatus(
      r.data.job_state === 'IN_PROGRESS'
        ? `Cancel of job ${id} requested: it stops before its commit.`
        : `Job ${id} is ${stateText(r.data.job_state)}.`,
    );
    setReload((n) => n + 1);
  };

  return (
    <section aria-labelledby="jobs-title">
      <h2 id="jobs-title">Jobs</h2>
      <Problem text={error} />
      <p role="status" class="ok">
        {status}
      </p>
      <div class="pager">
        <button type="button" onClick={() => setReload((n) => n + 1)}>
          Refresh
        </button>
      </div>
      {jobs && jobs.jobs.length === 0 && <p>No jobs.</p>}
      {jobs && jobs.jobs.length > 0 && (
        <table class="grid" aria-label="Jobs">
          <thead>
            <tr>
              <th scope="col">Job id</th>
              <th scope="col">Kind</th>
              <th scope="col">Table</th>
              <th scope="col">Status</th>
              <th scope="col">Created</th>
              <th scope="col">Started</th>
              <th scope="col">Ended</th>
              <th scope="col">Error</th>
              <th scope="col">
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {jobs.jobs.map((j) => (
              <tr key={j.job_id}>
                <td>
                  <code>{j.job_id}</code>
                </td>
                <td>{j.job_type}</td>
                <td>{j.table_id.join(' / ')}</td>
                <td>{stateText(j.state)}</td>
                <td>{millis(j.created_at_millis)}</td>
                <td>{maybeMillis(j.started_at_millis)}</td>
                <td>{maybeMillis(j.finished_at_millis)}</td>
                <td>{j.failure?.message ?? ''}</td>
                <td>
                  <button
                    type="button"
                    aria-expanded={shown === j.job_id}
                    aria-label={`Details of job ${j.job_id}`}
                    onClick={() => setShown(shown === j.job_id ? undefined : j.job_id)}
                  >
                    Details
                  </button>
                  {mayCancel &&
                    j.state === 'IN_PROGRESS' &&
                    (confirming === j.job_id ? (
                      <>
                        <button type="button" class="danger" onClick={() => void cancel(j.job_id)}>
                          Confirm cancel of job {j.job_id}
                        </button>
                        <button type="button" onClick={() => setConfirming(undefined)}>
                          Keep it
                        </button>
                      </>
                    ) : (
                      <button type="button" aria-label={`Cancel job ${j.job_id}`} onClick={() => setConfirming(j.job_id)}>
                        Cancel
                      </button>
                    ))}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {jobs && <Pager pages={pages} next={jobs.next} label="Jobs" />}
      {shown && <JobDetail db={db} id={shown} key={`${shown}-${reload}`} />}
    </section>
  );
}

/** One job as `/v1/jobs/describe` tells it. The gateway keeps no event history (`query_events` answers 406). */
function JobDetail({ db, id }: { db: Db; id: string }) {
  const [job, setJob] = useState<Described>();
  const [error, setError] = useState('');
  useEffect(() => {
    let live = true;
    db.api
      .POST('/v1/jobs/describe', { body: { job_id: id } })
      .then((r) => live && (r.error ? setError(problemText(r.error, r.response)) : setJob(r.data)))
      .catch((err: unknown) => live && setError(problemText(err)));
    return () => {
      live = false;
    };
  }, [db, id]);
  return (
    <section aria-labelledby="job-title">
      <h3 id="job-title">
        Job <code>{id}</code>
      </h3>
      <Problem text={error} />
      {job && (
        <dl class="facts" aria-label="Job details">
          <div>
            <dt>Kind</dt>
            <dd>{job.job_type}</dd>
          </div>
          <div>
            <dt>Status</dt>
            <dd>{stateText(job.job_state)}</dd>
          </div>
          <div>
            <dt>Created</dt>
            <dd>{millis(job.creation_ms)}</dd>
          </div>
          <div>
            <dt>Started</dt>
            <dd>{job.started_ms == null ? 'not yet' : millis(job.started_ms)}</dd>
          </div>
          <div>
            <dt>Ended</dt>
            <dd>{job.finished_ms == null ? 'not yet' : millis(job.finished_ms)}</dd>
          </div>
          <div>
            <dt>Attempts</dt>
            <dd>{job.attempts}</dd>
          </div>
          <div>
            <dt>Asked</dt>
            <dd>
              <code>{jsonText(job.spec, 400)}</code>
            </dd>
          </div>
          {job.result && (
            <div>
              <dt>Result</dt>
              <dd>
                <code>{jsonText(job.result, 400)}</code>
              </dd>
            </div>
          )}
          {job.failure && (
            <div>
              <dt>Error</dt>
              <dd>
                {job.failure.message} (in {job.failure.phase}; {job.failure.retryable ? 'may succeed if submitted again' : 'not retryable'})
              </dd>
            </div>
          )}
        </dl>
      )}
      <p class="hint">The gateway keeps a job&apos;s state, attempts, result and failure, not a history of its events.</p>
    </section>
  );
}
