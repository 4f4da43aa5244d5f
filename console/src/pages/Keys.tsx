import { useEffect, useState } from 'preact/hooks';
import { type Api, problemText } from '../api';
import type { components } from '../../generated/api';
import { when } from '../format';
import { Problem } from '../problem';

type ApiKey = components['schemas']['ApiKey'];
type Issued = components['schemas']['IssuedApiKey'];
type Role = ApiKey['role'];
type Grant = NonNullable<ApiKey['grants']>[number];

const GRANTS_EXAMPLE = '[{"privileges": ["describe", "select"], "on": {"namespace": ["prod"]}}]';

/** A grant as one line of text: its privileges, then where (the database, a namespace path, a table path). */
function grantText(g: Grant): string {
  const on = g.on as { database?: true; namespace?: string[]; table?: string[] };
  const where = on.database
    ? 'the database'
    : on.table
      ? `table ${on.table.join('.')}`
      : on.namespace?.length
        ? `namespace ${on.namespace.join('.')}`
        : 'the root namespace';
  return `${g.privileges.join(', ')} on ${where}`;
}

/** `datetime-local` (read as UTC) → RFC 3339; empty → null. */
const isoOf = (local: string): string | null => {
  const v = local.trim();
  if (!v) return null;
  return /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/.test(v) ? `${v}:00Z` : /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/.test(v) ? `${v}Z` : v;
};
/** RFC 3339 → the `datetime-local` value (UTC). */
const localOf = (iso: string | null): string => (iso ? new Date(iso).toISOString().slice(0, 16) : '');

/** The grants textarea's value: empty → null (the role on the whole database); JSON otherwise, checked by the API. */
function grantsOf(text: string): { value?: unknown; error?: string } {
  if (!text.trim()) return { value: null };
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    return { error: `Grants: not valid JSON (for example ${GRANTS_EXAMPLE})` };
  }
}

/** A key's own rate limit from two fields: both empty → null (only the database's limit). */
const rateOf = (limit: string, windowMs: string): unknown =>
  !limit.trim() && !windowMs.trim() ? null : { limit: Number(limit.trim() || NaN), window_ms: Number(windowMs.trim() || 1000) };

/** NaN (a non-number typed) is sent as text, for the API to refuse with its message, rather than as JSON's null. */
const sendable = <T,>(body: unknown): NonNullable<T> =>
  JSON.parse(
    JSON.stringify(body, (_k, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? 'not a number' : v)),
  ) as NonNullable<T>;

/**
 * A database's API keys: list (role, grants, creation, last use, expiry, state); create with a role, name, expiry,
 * grants and rate limit (the secret shown once); edit (PATCH: name, expiry, grants, rate limit); rotate (the new
 * secret shown once; the old key kept for an optional overlap); revoke. Rotate and revoke are confirmed on the page.
 */
export function Keys({ api, name }: { api: Api; name: string }) {
  const [keys, setKeys] = useState<ApiKey[]>();
  const [error, setError] = useState('');
  const [reload, setReload] = useState(0);
  const [secret, setSecret] = useState<{ issued: Issued; rotated?: string }>();
  const [confirming, setConfirming] = useState<{ id: string; action: 'revoke' | 'rotate' }>();
  const [editing, setEditing] = useState<string>();

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
          setKeys(r.data.api_keys);
        }
      })
      .catch((err: unknown) => live && setError(problemText(err)));
    return () => {
      live = false;
    };
  }, [api, name, reload]);

  const revoke = async (id: string) => {
    setConfirming(undefined);
    setError('');
    const r = await api.DELETE('/admin/v1/databases/{name}/api-keys/{id}', { params: { path: { name, id } } });
    if (r.error) return setError(problemText(r.error, r.response));
    setReload((n) => n + 1);
  };
  const rotate = async (id: string, overlap: string) => {
    setError('');
    const body = overlap.trim() ? { overlap_seconds: Number(overlap.trim()) } : {};
    const r = await api.POST('/admin/v1/databases/{name}/api-keys/{id}/rotate', {
      params: { path: { name, id } },
      body: sendable(body),
    });
    if (r.error) return setError(problemText(r.error, r.response));
    setConfirming(undefined);
    setSecret({ issued: r.data, rotated: id });
    setReload((n) => n + 1);
  };
  const edited = editing ? keys?.find((k) => k.id === editing) : undefined;

  return (
    <section aria-labelledby="keys-title">
      <h2 id="keys-title">API keys</h2>
      <Problem text={error} />
      {keys && (
        <CreateKey
          api={api}
          name={name}
          onCreated={(issued) => {
            setSecret({ issued });
            setReload((n) => n + 1);
          }}
        />
      )}
      {secret && (
        <div class="secret" role="status" aria-live="polite">
          <p>
            {secret.rotated ? (
              <>
                Key <code>{secret.rotated}</code> rotated: new {secret.issued.role} key <code>{secret.issued.id}</code>.
              </>
            ) : (
              <>
                New {secret.issued.role} key <code>{secret.issued.id}</code>.
              </>
            )}{' '}
            Copy the secret now: it is shown only this once.
          </p>
          <label for="new-secret">Secret</label>
          <input id="new-secret" readOnly value={secret.issued.api_key} onFocus={(e) => e.currentTarget.select()} />
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
              <th scope="col">Grants</th>
              <th scope="col">Rate limit</th>
              <th scope="col">Created</th>
              <th scope="col">Last used</th>
              <th scope="col">Expires</th>
              <th scope="col">State</th>
              <th scope="col">
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {keys.map((k) => {
              const expired = !!k.expires_at && Date.parse(k.expires_at) <= Date.now();
              const active = !k.revoked_at && !expired;
              return (
                <tr key={k.id}>
                  <td>
                    <code>{k.id}</code>
                    {k.rotated_from && (
                      <span class="hint">
                        {' '}
                        (replaces <code>{k.rotated_from}</code>)
                      </span>
                    )}
                  </td>
                  <td>{k.name ?? ''}</td>
                  <td>{k.role}</td>
                  <td>
                    {k.grants ? (
                      <ul class="plain">
                        {k.grants.map((g, i) => (
                          <li key={i}>{grantText(g)}</li>
                        ))}
                      </ul>
                    ) : (
                      'whole database'
                    )}
                  </td>
                  <td>{k.rate_limit ? `${k.rate_limit.limit} per ${k.rate_limit.window_ms} ms` : 'database limit'}</td>
                  <td>{when(k.created_at)}</td>
                  <td>{when(k.last_used_at)}</td>
                  <td>{k.expires_at ? when(k.expires_at) : 'never'}</td>
                  <td>{k.revoked_at ? `revoked ${when(k.revoked_at)}` : expired ? 'expired' : 'active'}</td>
                  <td>
                    {active &&
                      (confirming?.id === k.id ? (
                        confirming.action === 'revoke' ? (
                          <>
                            <button type="button" class="danger" onClick={() => void revoke(k.id)}>
                              Confirm revoke {k.id}
                            </button>
                            <button type="button" onClick={() => setConfirming(undefined)}>
                              Cancel
                            </button>
                          </>
                        ) : (
                          <RotateConfirm
                            id={k.id}
                            onRotate={(overlap) => void rotate(k.id, overlap)}
                            onCancel={() => setConfirming(undefined)}
                          />
                        )
                      ) : (
                        <>
                          <button type="button" onClick={() => setEditing(k.id)} aria-label={`Edit key ${k.id}`}>
                            Edit
                          </button>
                          <button
                            type="button"
                            onClick={() => setConfirming({ id: k.id, action: 'rotate' })}
                            aria-label={`Rotate key ${k.id}`}
                          >
                            Rotate
                          </button>
                          <button
                            type="button"
                            onClick={() => setConfirming({ id: k.id, action: 'revoke' })}
                            aria-label={`Revoke key ${k.id}`}
                          >
                            Revoke
                          </button>
                        </>
                      ))}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {edited && (
        <EditKey
          api={api}
          name={name}
          apiKey={edited}
          key={edited.id}
          onDone={(changed) => {
            setEditing(undefined);
            if (changed) setReload((n) => n + 1);
          }}
        />
      )}
    </section>
  );
}

function RotateConfirm({ id, onRotate, onCancel }: { id: string; onRotate: (overlap: string) => void; onCancel: () => void }) {
  const [overlap, setOverlap] = useState('');
  return (
    <form
      class="inline"
      aria-label={`Rotate key ${id}`}
      onSubmit={(e) => {
        e.preventDefault();
        onRotate(overlap);
      }}
    >
      <label for={`overlap-${id}`}>Old key valid for (seconds; empty: until revoked)</label>
      <input id={`overlap-${id}`} inputMode="numeric" size={8} value={overlap} onInput={(e) => setOverlap(e.currentTarget.value)} />
      <button type="submit" class="danger">
        Confirm rotate {id}
      </button>
      <button type="button" onClick={onCancel}>
        Cancel
      </button>
    </form>
  );
}

function CreateKey({ api, name, onCreated }: { api: Api; name: string; onCreated: (issued: Issued) => void }) {
  const [role, setRole] = useState<Role>('read');
  const [label, setLabel] = useState('');
  const [expires, setExpires] = useState('');
  const [grants, setGrants] = useState('');
  const [limit, setLimit] = useState('');
  const [windowMs, setWindowMs] = useState('');
  const [error, setError] = useState('');
  const create = async (e: Event) => {
    e.preventDefault();
    setError('');
    const g = grantsOf(grants);
    if (g.error) return setError(g.error);
    const body: Record<string, unknown> = { role };
    if (label.trim()) body.name = label.trim();
    const at = isoOf(expires);
    if (at) body.expires_at = at;
    if (g.value !== null) body.grants = g.value;
    const rate = rateOf(limit, windowMs);
    if (rate) body.rate_limit = rate;
    const r = await api.POST('/admin/v1/databases/{name}/api-keys', { params: { path: { name } }, body: sendable(body) });
    if (r.error) return setError(problemText(r.error, r.response));
    setLabel('');
    setExpires('');
    setGrants('');
    setLimit('');
    setWindowMs('');
    onCreated(r.data);
  };
  return (
    <form class="inline" onSubmit={create} aria-label="Create an API key">
      <label for="key-role">Role</label>
      <select id="key-role" value={role} onChange={(e) => setRole(e.currentTarget.value as Role)}>
        <option value="read">read</option>
        <option value="write">write</option>
        <option value="admin">admin</option>
      </select>
      <label for="key-name">Key name (optional)</label>
      <input id="key-name" value={label} maxLength={200} onInput={(e) => setLabel(e.currentTarget.value)} />
      <label for="key-expires">Expires at (UTC; empty: never)</label>
      <input id="key-expires" type="datetime-local" value={expires} onInput={(e) => setExpires(e.currentTarget.value)} />
      <label for="key-limit">Key rate limit (requests; empty: the database's)</label>
      <input id="key-limit" inputMode="numeric" size={8} value={limit} onInput={(e) => setLimit(e.currentTarget.value)} />
      <label for="key-window">per window (ms)</label>
      <input
        id="key-window"
        inputMode="numeric"
        size={8}
        placeholder="1000"
        value={windowMs}
        onInput={(e) => setWindowMs(e.currentTarget.value)}
      />
      <label for="key-grants">Grants (JSON; empty: all of the database)</label>
      <textarea
        id="key-grants"
        rows={3}
        cols={60}
        placeholder={GRANTS_EXAMPLE}
        value={grants}
        onInput={(e) => setGrants(e.currentTarget.value)}
      />
      <button type="submit">Create key</button>
      <Problem text={error} />
    </form>
  );
}

/** Editing a key (PATCH): name, expiry, grants and rate limit; only what changed is sent. */
function EditKey({ api, name, apiKey, onDone }: { api: Api; name: string; apiKey: ApiKey; onDone: (changed: boolean) => void }) {
  const initial = {
    name: apiKey.name ?? '',
    expires: localOf(apiKey.expires_at),
    grants: apiKey.grants ? JSON.stringify(apiKey.grants) : '',
    limit: apiKey.rate_limit ? String(apiKey.rate_limit.limit) : '',
    windowMs: apiKey.rate_limit ? String(apiKey.rate_limit.window_ms) : '',
  };
  const [form, setForm] = useState(initial);
  const [error, setError] = useState('');
  const set = (k: keyof typeof initial) => (e: { currentTarget: { value: string } }) => setForm({ ...form, [k]: e.currentTarget.value });
  const save = async (e: Event) => {
    e.preventDefault();
    setError('');
    const body: Record<string, unknown> = {};
    if (form.name !== initial.name) body.name = form.name.trim() || null;
    if (form.expires !== initial.expires) body.expires_at = isoOf(form.expires);
    if (form.grants !== initial.grants) {
      const g = grantsOf(form.grants);
      if (g.error) return setError(g.error);
      body.grants = g.value;
    }
    if (form.limit !== initial.limit || form.windowMs !== initial.windowMs) body.rate_limit = rateOf(form.limit, form.windowMs);
    if (!Object.keys(body).length) return onDone(false);
    const r = await api.PATCH('/admin/v1/databases/{name}/api-keys/{id}', {
      params: { path: { name, id: apiKey.id } },
      body: sendable(body),
    });
    if (r.error) return setError(problemText(r.error, r.response));
    onDone(true);
  };
  return (
    <section aria-labelledby="edit-key-title">
      <h3 id="edit-key-title">
        Edit key <code>{apiKey.id}</code>
      </h3>
      <form class="inline" onSubmit={save} aria-label={`Edit key ${apiKey.id}`}>
        <label for="edit-name">Name</label>
        <input id="edit-name" value={form.name} maxLength={200} onInput={set('name')} />
        <label for="edit-expires">Expires at (UTC; empty: never)</label>
        <input id="edit-expires" type="datetime-local" value={form.expires} onInput={set('expires')} />
        <label for="edit-limit">Key rate limit (requests; empty: the database's)</label>
        <input id="edit-limit" inputMode="numeric" size={8} value={form.limit} onInput={set('limit')} />
        <label for="edit-window">per window (ms)</label>
        <input id="edit-window" inputMode="numeric" size={8} placeholder="1000" value={form.windowMs} onInput={set('windowMs')} />
        <label for="edit-grants">Grants (JSON; empty: all of the database)</label>
        <textarea id="edit-grants" rows={3} cols={60} placeholder={GRANTS_EXAMPLE} value={form.grants} onInput={set('grants')} />
        <button type="submit">Save key</button>
        <button type="button" onClick={() => onDone(false)}>
          Cancel
        </button>
        <Problem text={error} />
      </form>
    </section>
  );
}
