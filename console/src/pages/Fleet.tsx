import { useEffect, useState } from 'preact/hooks';
import { type Api, problemText } from '../api';
import type { components } from '../../generated/api';
import { bytes, num, when } from '../format';
import { Chart } from '../chart';
import { dbHref } from '../nav';
import { Problem } from '../problem';

type Database = components['schemas']['Database'];
type DayUsage = components['schemas']['FleetUsageReport']['databases'][number];
type TopStorage = components['schemas']['TopStorageReport']['databases'];
type History = components['schemas']['UsageHistoryReport'];
type Health = components['schemas']['OperatorHealthReport'];

/**
 * The operator's fleet: the health of the catalog, Redis and each storage profile; requests (throttled and failed
 * too) and storage over time; every database (server-side pages) with today's usage; the top databases by storage and
 * by requests; creating a database.
 */
export function Fleet({ api }: { api: Api }) {
  const [pageToken, setPageToken] = useState<string | undefined>(undefined);
  const [history, setHistory] = useState<(string | undefined)[]>([]);
  const [page, setPage] = useState<{ databases: Database[]; next?: string }>();
  const [usage, setUsage] = useState<Map<string, DayUsage>>(new Map());
  const [top, setTop] = useState<TopStorage>();
  const [topRequests, setTopRequests] = useState<DayUsage[]>();
  const [error, setError] = useState('');
  const [reload, setReload] = useState(0);

  useEffect(() => {
    let live = true;
    (async () => {
      const r = await api.GET('/admin/v1/databases', { params: { query: { limit: 50, page_token: pageToken } } });
      if (!live) return;
      if (r.error) return setError(problemText(r.error, r.response));
      setError('');
      setPage({ databases: r.data.databases, next: r.data.page_token });
      const u = await api.GET('/admin/v1/usage', { params: { query: { sort: 'requests', limit: 1000 } } });
      if (live && u.data) {
        setUsage(new Map(u.data.databases.map((d) => [d.database, d])));
        setTopRequests(u.data.databases.filter((d) => d.requests > 0).slice(0, 10));
      }
      const t = await api.GET('/admin/v1/usage/top-storage', { params: { query: { limit: 10 } } });
      if (live && t.data) setTop(t.data.databases);
    })().catch((err: unknown) => live && setError(problemText(err)));
    return () => {
      live = false;
    };
  }, [api, pageToken, reload]);

  return (
    <section aria-labelledby="fleet-title">
      <h1 id="fleet-title">Fleet</h1>
      <HealthPanel api={api} />
      <FleetCharts api={api} reload={reload} />
      <CreateDatabase api={api} onCreated={() => setReload((n) => n + 1)} />
      <Problem text={error} />
      <table class="grid" aria-label="Databases">
        <thead>
          <tr>
            <th scope="col">Database</th>
            <th scope="col">Storage profile</th>
            <th scope="col">Requests today</th>
            <th scope="col">Throttled</th>
            <th scope="col">Failed</th>
            <th scope="col">Storage</th>
            <th scope="col">Tables</th>
            <th scope="col">Rate limit</th>
          </tr>
        </thead>
        <tbody>
          {page?.databases.map((d) => {
            const u = usage.get(d.name);
            return (
              <tr key={d.id}>
                <td>
                  <a href={dbHref(d.name, 'overview')}>{d.name}</a>
                </td>
                <td>{d.storage_profile}</td>
                <td class="n">{num(u?.requests ?? 0)}</td>
                <td class="n">{num(u?.throttled_requests ?? 0)}</td>
                <td class="n">{num(u?.failed_requests ?? 0)}</td>
                <td class="n">{bytes(u?.storage_bytes)}</td>
                <td class="n">{num(u?.tables)}</td>
                <td>{d.rate_limit ? `${d.rate_limit.limit} per ${d.rate_limit.window_ms} ms` : 'server default'}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {page && page.databases.length === 0 && <p>No databases yet.</p>}
      <div class="pager">
        <button
          type="button"
          disabled={history.length === 0}
          onClick={() => {
            setPageToken(history[history.length - 1]);
            setHistory(history.slice(0, -1));
          }}
        >
          Previous page
        </button>
        <button
          type="button"
          disabled={!page?.next}
          onClick={() => {
            setHistory([...history, pageToken]);
            setPageToken(page?.next);
          }}
        >
          Next page
        </button>
      </div>
      <h2 id="top-title">Top databases by storage</h2>
      {top && top.length === 0 && <p>No storage measured yet (the storage refresher measures tables in the background).</p>}
      {top && top.length > 0 && (
        <ol aria-labelledby="top-title">
          {top.map((d) => (
            <li key={d.database}>
              <a href={dbHref(d.database, 'overview')}>{d.database}</a>: {bytes(d.storage_bytes)} in {num(d.tables)} tables
            </li>
          ))}
        </ol>
      )}
      <h2 id="top-requests-title">Top databases by requests today</h2>
      {topRequests && topRequests.length === 0 && <p>No requests today yet.</p>}
      {topRequests && topRequests.length > 0 && (
        <ol aria-labelledby="top-requests-title">
          {topRequests.map((d) => (
            <li key={d.database}>
              <a href={dbHref(d.database, 'overview')}>{d.database}</a>: {num(d.requests)} requests ({num(d.throttled_requests)} throttled,{' '}
              {num(d.failed_requests)} failed)
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}

/** The catalog, Redis and every storage profile, as `GET /admin/v1/health` finds them now (asked again on demand). */
function HealthPanel({ api }: { api: Api }) {
  const [health, setHealth] = useState<Health>();
  const [error, setError] = useState('');
  const [again, setAgain] = useState(0);
  useEffect(() => {
    let live = true;
    api
      .GET('/admin/v1/health')
      .then((r) => live && (r.error ? setError(problemText(r.error, r.response)) : (setError(''), setHealth(r.data))))
      .catch((err: unknown) => live && setError(problemText(err)));
    return () => {
      live = false;
    };
  }, [api, again]);
  const state = (up: boolean) => <span class={up ? 'ok' : 'error'}>{up ? 'up' : 'down'}</span>;
  return (
    <section aria-labelledby="health-title">
      <h2 id="health-title">Health</h2>
      <Problem text={error} />
      {health && (
        <table class="grid" aria-label="Health">
          <thead>
            <tr>
              <th scope="col">Part</th>
              <th scope="col">State</th>
              <th scope="col">Detail</th>
            </tr>
          </thead>
          <tbody>
            <tr>
              <td>Catalog</td>
              <td>{state(health.catalog.status === 'up')}</td>
              <td>{health.catalog.error ?? `answered in ${Math.round(health.catalog.latency_ms)} ms`}</td>
            </tr>
            <tr>
              <td>Redis</td>
              <td>{health.redis.status === 'none' ? 'not configured' : state(health.redis.status === 'ready')}</td>
              <td>{health.redis.status === 'none' ? 'rate limits are counted in memory' : ''}</td>
            </tr>
            {health.storage_profiles.map((p) => (
              <tr key={p.name}>
                <td>Storage profile {p.name}</td>
                <td>{state(p.status === 'up')}</td>
                <td>{p.error ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <p>
        {health && <>Checked {when(health.checked_at)}. </>}
        <button type="button" onClick={() => setAgain((n) => n + 1)}>
          Check again
        </button>
      </p>
    </section>
  );
}

/** The whole fleet's requests (throttled and failed apart) per hour over two days, and storage per day over 30. */
function FleetCharts({ api, reload }: { api: Api; reload: number }) {
  const [hours, setHours] = useState<History>();
  const [days, setDays] = useState<History>();
  const [error, setError] = useState('');
  useEffect(() => {
    let live = true;
    (async () => {
      const h = await api.GET('/admin/v1/usage/history', {
        params: { query: { granularity: 'hour', from: new Date(Date.now() - 47 * 3_600_000).toISOString().slice(0, 13) + ':00:00Z' } },
      });
      if (!live) return;
      if (h.error) return setError(problemText(h.error, h.response));
      setHours(h.data);
      const d = await api.GET('/admin/v1/usage/history', {
        params: { query: { granularity: 'day', from: new Date(Date.now() - 29 * 86_400_000).toISOString().slice(0, 10) } },
      });
      if (live && d.data) setDays(d.data);
    })().catch((err: unknown) => live && setError(problemText(err)));
    return () => {
      live = false;
    };
  }, [api, reload]);
  const at = (r: History) => r.periods.map((p) => Date.parse(p.start) / 1000);
  return (
    <section aria-labelledby="charts-title">
      <h2 id="charts-title">Over time</h2>
      <Problem text={error} />
      {hours && (
        <Chart
          title="Fleet requests per hour"
          hourly
          x={at(hours)}
          series={[
            { label: 'Requests', values: hours.periods.map((p) => p.requests) },
            { label: 'Throttled', values: hours.periods.map((p) => p.throttled_requests) },
            { label: 'Failed', values: hours.periods.map((p) => p.failed_requests) },
          ]}
        />
      )}
      {days && (
        <Chart
          title="Fleet storage per day"
          x={at(days)}
          series={[
            { label: 'Storage', values: days.periods.map((p) => p.storage_bytes), format: bytes },
            { label: 'Current versions', values: days.periods.map((p) => p.current_version_bytes), format: bytes },
          ]}
        />
      )}
    </section>
  );
}

function CreateDatabase({ api, onCreated }: { api: Api; onCreated: () => void }) {
  const [name, setName] = useState('');
  const [message, setMessage] = useState<{ error: boolean; text: string }>();
  const submit = async (e: Event) => {
    e.preventDefault();
    const r = await api.POST('/admin/v1/databases', { body: { name: name.trim() } });
    if (r.error) return setMessage({ error: true, text: problemText(r.error, r.response) });
    setMessage({ error: false, text: `Created database ${r.data.name}.` });
    setName('');
    onCreated();
  };
  return (
    <form class="inline" onSubmit={submit} aria-label="Create a database">
      <label for="new-db">New database name</label>
      <input id="new-db" required pattern="[A-Za-z0-9_.\-]+" value={name} onInput={(e) => setName(e.currentTarget.value)} />
      <button type="submit">Create database</button>
      {message && (
        <p role={message.error ? 'alert' : 'status'} class={message.error ? 'error' : 'ok'}>
          {message.text}
        </p>
      )}
    </form>
  );
}
