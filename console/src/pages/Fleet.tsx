import { useEffect, useState } from 'preact/hooks';
import { type Api, problemText } from '../api';
import type { components } from '../../generated/api';
import { bytes, num } from '../format';
import { dbHref } from '../nav';

type Database = components['schemas']['Database'];
type DayUsage = components['schemas']['FleetUsageReport']['databases'][number];
type TopStorage = components['schemas']['TopStorageReport']['databases'];

/** The operator's fleet: every database (server-side pages) with today's usage, and creating a database. */
export function Fleet({ api }: { api: Api }) {
  const [pageToken, setPageToken] = useState<string | undefined>(undefined);
  const [history, setHistory] = useState<(string | undefined)[]>([]);
  const [page, setPage] = useState<{ databases: Database[]; next?: string }>();
  const [usage, setUsage] = useState<Map<string, DayUsage>>(new Map());
  const [top, setTop] = useState<TopStorage>();
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
      if (live && u.data) setUsage(new Map(u.data.databases.map((d) => [d.database, d])));
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
      <CreateDatabase api={api} onCreated={() => setReload((n) => n + 1)} />
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      <table class="grid" aria-label="Databases">
        <thead>
          <tr>
            <th scope="col">Database</th>
            <th scope="col">Storage profile</th>
            <th scope="col">Requests today</th>
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
