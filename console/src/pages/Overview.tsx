import { useEffect, useState } from 'preact/hooks';
import { type Api, problemText } from '../api';
import type { components } from '../../generated/api';
import { bytes, num } from '../format';
import { Chart } from '../chart';

type Database = components['schemas']['Database'];
type Usage = components['schemas']['UsageReport'];

/**
 * A database's overview: its settings, quotas and rate limit (the operator's: `GET /admin/v1/databases/{name}` is
 * the operator's route) and its daily usage (the operator, or an admin key of the database).
 */
export function Overview({ api, name, operator }: { api: Api; name: string; operator: boolean }) {
  const [db, setDb] = useState<Database>();
  const [error, setError] = useState('');
  useEffect(() => {
    if (!operator) return;
    let live = true;
    api
      .GET('/admin/v1/databases/{name}', { params: { path: { name } } })
      .then((r) => live && (r.error ? setError(problemText(r.error, r.response)) : setDb(r.data)))
      .catch((err: unknown) => live && setError(problemText(err)));
    return () => {
      live = false;
    };
  }, [api, name, operator]);
  return (
    <>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {db && <Settings db={db} />}
      <DailyUsage api={api} name={name} />
    </>
  );
}

function Settings({ db }: { db: Database }) {
  const q = db.quotas;
  const rows: [string, string][] = [
    ['Storage profile', db.storage_profile],
    ['Storage root', db.storage_root],
    ['Rate limit', db.rate_limit ? `${db.rate_limit.limit} requests per ${db.rate_limit.window_ms} ms` : 'server default'],
    ['Max tables', q.max_tables === null ? 'no limit' : num(q.max_tables)],
    ['Max namespaces', q.max_namespaces === null ? 'no limit' : num(q.max_namespaces)],
    ['Max storage', q.max_storage_bytes === null ? 'no limit' : bytes(q.max_storage_bytes)],
    ['Max rows per write', q.max_rows_per_write === null ? 'no limit' : num(q.max_rows_per_write)],
    ['Managed versioning', db.managed_versioning ? 'on' : 'off'],
  ];
  if (db.drop_profile) rows.push(['Drop profile', `${db.drop_profile.profile}, kept ${db.drop_profile.retention_seconds} s`]);
  for (const [k, v] of Object.entries(db.properties)) rows.push([`Property ${k}`, v]);
  return (
    <section aria-labelledby="settings-title">
      <h2 id="settings-title">Settings and quotas</h2>
      <dl class="facts">
        {rows.map(([k, v]) => (
          <div key={k}>
            <dt>{k}</dt>
            <dd>{v}</dd>
          </div>
        ))}
      </dl>
    </section>
  );
}

function DailyUsage({ api, name }: { api: Api; name: string }) {
  const [usage, setUsage] = useState<Usage>();
  const [error, setError] = useState('');
  useEffect(() => {
    let live = true;
    const from = new Date(Date.now() - 6 * 86_400_000).toISOString().slice(0, 10);
    api
      .GET('/admin/v1/databases/{name}/usage', { params: { path: { name }, query: { granularity: 'day', from } } })
      .then((r) => live && (r.error ? setError(problemText(r.error, r.response)) : setUsage(r.data)))
      .catch((err: unknown) => live && setError(problemText(err)));
    return () => {
      live = false;
    };
  }, [api, name]);
  return (
    <section aria-labelledby="usage-title">
      <h2 id="usage-title">Usage, last 7 days</h2>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {usage && (
        <Chart
          title="Requests per day"
          x={usage.periods.map((p) => Date.parse(p.start) / 1000)}
          series={[
            { label: 'Reads', values: usage.periods.map((p) => p.read_requests) },
            { label: 'Writes', values: usage.periods.map((p) => p.write_requests) },
          ]}
        />
      )}
      {usage && (
        <table class="grid" aria-label="Daily usage">
          <thead>
            <tr>
              <th scope="col">Day (UTC)</th>
              <th scope="col">Requests</th>
              <th scope="col">Reads</th>
              <th scope="col">Writes</th>
              <th scope="col">Rows written</th>
              <th scope="col">Bytes ingested</th>
              <th scope="col">Storage</th>
              <th scope="col">Tables</th>
            </tr>
          </thead>
          <tbody>
            {usage.periods.map((p) => (
              <tr key={p.start}>
                <td>{p.start.slice(0, 10)}</td>
                <td class="n">{num(p.requests)}</td>
                <td class="n">{num(p.read_requests)}</td>
                <td class="n">{num(p.write_requests)}</td>
                <td class="n">{num(p.rows_written)}</td>
                <td class="n">{bytes(p.bytes_ingested)}</td>
                <td class="n">{bytes(p.storage_bytes)}</td>
                <td class="n">{num(p.tables)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
