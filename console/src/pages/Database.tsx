import { useEffect, useState } from 'preact/hooks';
import { type Api, problemText } from '../api';
import type { components } from '../../generated/api';
import { bytes, num, when } from '../format';

type Database = components['schemas']['Database'];
type ApiKey = components['schemas']['ApiKey'];
type Usage = components['schemas']['UsageReport'];
type Role = ApiKey['role'];

/**
 * A database: its settings, quotas and rate limit, its API keys (list, create with a role — the secret shown once —,
 * revoke) and its daily usage. With a database key (`databaseKey`) only the keys, and only when the key may manage
 * them (an admin key); otherwise the page says so and offers nothing that would fail.
 */
export function DatabasePage({ api, name, databaseKey = false }: { api: Api; name: string; databaseKey?: boolean }) {
  const [db, setDb] = useState<Database>();
  const [error, setError] = useState('');
  useEffect(() => {
    if (databaseKey) return;
    let live = true;
    api
      .GET('/admin/v1/databases/{name}', { params: { path: { name } } })
      .then((r) => live && (r.error ? setError(problemText(r.error, r.response)) : setDb(r.data)))
      .catch((err: unknown) => live && setError(problemText(err)));
    return () => {
      live = false;
    };
  }, [api, name, databaseKey]);

  return (
    <section aria-labelledby="db-title">
      <h1 id="db-title">
        Database <span class="name">{name}</span>
      </h1>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {db && <Settings db={db} />}
      <ApiKeys api={api} name={name} />
      {!databaseKey && <DailyUsage api={api} name={name} />}
    </section>
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

function ApiKeys({ api, name }: { api: Api; name: string }) {
  const [keys, setKeys] = useState<ApiKey[]>();
  const [error, setError] = useState('');
  const [reload, setReload] = useState(0);
  const [secret, setSecret] = useState<{ id: string; key: string; role: Role }>();
  const [role, setRole] = useState<Role>('read');
  const [label, setLabel] = useState('');
  const [confirming, setConfirming] = useState<string>();

  useEffect(() => {
    let live = true;
    api
      .GET('/admin/v1/databases/{name}/api-keys', { params: { path: { name } } })
      .then((r) => {
        if (!live) return;
        if (r.error) {
          setKeys(undefined);
          setError(
            r.response.status === 403
              ? 'This key may not manage API keys (an admin key of the database may).'
              : problemText(r.error, r.response),
          );
        } else {
          setError('');
          setKeys(r.data.api_keys);
        }
      })
      .catch((err: unknown) => live && setError(problemText(err)));
    return () => {
      live = false;
    };
  }, [api, name, reload]);

  const create = async (e: Event) => {
    e.preventDefault();
    const r = await api.POST('/admin/v1/databases/{name}/api-keys', {
      params: { path: { name } },
      body: { role, ...(label.trim() ? { name: label.trim() } : {}) },
    });
    if (r.error) return setError(problemText(r.error, r.response));
    setSecret({ id: r.data.id, key: r.data.api_key, role: r.data.role });
    setLabel('');
    setReload((n) => n + 1);
  };
  const revoke = async (id: string) => {
    setConfirming(undefined);
    const r = await api.DELETE('/admin/v1/databases/{name}/api-keys/{id}', { params: { path: { name, id } } });
    if (r.error) return setError(problemText(r.error, r.response));
    setReload((n) => n + 1);
  };

  return (
    <section aria-labelledby="keys-title">
      <h2 id="keys-title">API keys</h2>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {keys && (
        <form class="inline" onSubmit={create} aria-label="Create an API key">
          <label for="key-role">Role</label>
          <select id="key-role" value={role} onChange={(e) => setRole(e.currentTarget.value as Role)}>
            <option value="read">read</option>
            <option value="write">write</option>
            <option value="admin">admin</option>
          </select>
          <label for="key-name">Key name (optional)</label>
          <input id="key-name" value={label} maxLength={200} onInput={(e) => setLabel(e.currentTarget.value)} />
          <button type="submit">Create key</button>
        </form>
      )}
      {secret && (
        <div class="secret" role="status" aria-live="polite">
          <p>
            New {secret.role} key <code>{secret.id}</code>. Copy the secret now: it is shown only this once.
          </p>
          <label for="new-secret">Secret</label>
          <input id="new-secret" readOnly value={secret.key} onFocus={(e) => e.currentTarget.select()} />
          <button type="button" onClick={() => setSecret(undefined)}>
            I have copied it
          </button>
        </div>
      )}
      {keys && (
        <table class="grid" aria-label="API keys">
          <thead>
            <tr>
              <th scope="col">Key id</th>
              <th scope="col">Name</th>
              <th scope="col">Role</th>
              <th scope="col">Created</th>
              <th scope="col">Last used</th>
              <th scope="col">State</th>
              <th scope="col">
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {keys.map((k) => (
              <tr key={k.id}>
                <td>
                  <code>{k.id}</code>
                </td>
                <td>{k.name ?? ''}</td>
                <td>{k.role}</td>
                <td>{when(k.created_at)}</td>
                <td>{when(k.last_used_at)}</td>
                <td>{k.revoked_at ? `revoked ${when(k.revoked_at)}` : k.expires_at ? `expires ${when(k.expires_at)}` : 'active'}</td>
                <td>
                  {!k.revoked_at &&
                    (confirming === k.id ? (
                      <>
                        <button type="button" class="danger" onClick={() => void revoke(k.id)}>
                          Confirm revoke {k.id}
                        </button>
                        <button type="button" onClick={() => setConfirming(undefined)}>
                          Cancel
                        </button>
                      </>
                    ) : (
                      <button type="button" onClick={() => setConfirming(k.id)} aria-label={`Revoke key ${k.id}`}>
                        Revoke
                      </button>
                    ))}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
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
