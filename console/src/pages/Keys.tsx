import { useEffect, useState } from 'preact/hooks';
import { type Api, problemText } from '../api';
import type { components } from '../../generated/api';
import { when } from '../format';

type ApiKey = components['schemas']['ApiKey'];
type Role = ApiKey['role'];

/** A database's API keys: list (role, creation, last use, state), create with a role (the secret shown once), revoke. */
export function Keys({ api, name }: { api: Api; name: string }) {
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
