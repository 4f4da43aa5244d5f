import { useEffect, useState } from 'preact/hooks';
import { type Api, problemText } from '../api';
import type { components, operations } from '../../generated/api';
import { bytes, num } from '../format';
import { Usage } from './Usage';
import { Maintenance } from './Maintenance';
import { Problem } from '../problem';

type Database = components['schemas']['Database'];
type Change = NonNullable<operations['UpdateDatabase']['requestBody']>['content']['application/json'];

/**
 * A database's overview: its settings, quotas and rate limit (the operator's: `GET/PATCH /admin/v1/databases/{name}`
 * are the operator's routes), its maintenance policy (operator) and its usage (the operator, or an admin key of the
 * database).
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
      <Problem text={error} />
      {db && <Settings db={db} />}
      {db && <EditSettings api={api} db={db} onSaved={setDb} key={db.name} />}
      {operator && <Maintenance api={api} name={name} />}
      <Usage api={api} name={name} />
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
  if (db.drop_profile)
    rows.push([
      'Drop profile',
      `${db.drop_profile.profile} (${db.drop_profile.source.profile}), kept ${db.drop_profile.retention_seconds} s (${db.drop_profile.source.retention_seconds})`,
    ]);
  if (db.protected !== undefined) rows.push(['Protected from deletion', db.protected ? 'yes' : 'no']);
  if (db.network_rules)
    rows.push([
      'Network rules',
      `${db.network_rules.allowed_cidrs.length ? db.network_rules.allowed_cidrs.join(', ') : 'any address'}${db.network_rules.private_only ? ', private endpoints only' : ''}`,
    ]);
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

const QUOTAS = [
  ['max_tables', 'Max tables'],
  ['max_namespaces', 'Max namespaces'],
  ['max_storage_bytes', 'Max storage bytes'],
  ['max_rows_per_write', 'Max rows per write'],
] as const;

/** The form's fields as text, from the database as the API shows it (what "changed" is measured against). */
function formOf(db: Database): Record<string, string> {
  const f: Record<string, string> = {
    rate_limit: db.rate_limit ? String(db.rate_limit.limit) : '',
    rate_window_ms: db.rate_limit ? String(db.rate_limit.window_ms) : '',
    managed_versioning: String(db.managed_versioning),
    protected: String(db.protected ?? false),
    drop_profile: db.drop_profile?.source.profile === 'database' ? db.drop_profile.profile : '',
    drop_retention_seconds: db.drop_profile?.source.retention_seconds === 'database' ? String(db.drop_profile.retention_seconds) : '',
    properties: JSON.stringify(db.properties, null, 2),
    allowed_cidrs: db.network_rules?.allowed_cidrs.join('\n') ?? '',
    private_only: String(db.network_rules?.private_only ?? false),
  };
  for (const [k] of QUOTAS) f[k] = db.quotas[k] === null ? '' : String(db.quotas[k]);
  return f;
}

/** A number field's value: empty → null; anything else is sent as typed (a non-number as it is: the API says why). */
const numberOrNull = (v: string): number | null => (v.trim() === '' ? null : Number(v.trim()));

/**
 * Editing a database (operator): quotas, rate limit, drop profile and retention, managed versioning, deletion
 * protection, properties and network rules, sent with `PATCH /admin/v1/databases/{name}` — only what changed. The
 * API validates; its 400 message is shown.
 */
function EditSettings({ api, db, onSaved }: { api: Api; db: Database; onSaved: (db: Database) => void }) {
  const initial = formOf(db);
  const [form, setForm] = useState(initial);
  const [error, setError] = useState('');
  const [saved, setSaved] = useState('');
  const set = (k: string) => (e: { currentTarget: { value: string } }) => setForm({ ...form, [k]: e.currentTarget.value });
  const setBool = (k: string) => (e: { currentTarget: { checked: boolean } }) => setForm({ ...form, [k]: String(e.currentTarget.checked) });
  const changed = (k: string) => form[k] !== initial[k];

  const save = async (e: Event) => {
    e.preventDefault();
    setError('');
    setSaved('');
    // Values the API would refuse are still sent (as numbers, or NaN → null is avoided): the API's message is the check.
    const body: Record<string, unknown> = {};
    const quotas: Record<string, number | null> = {};
    for (const [k] of QUOTAS) if (changed(k)) quotas[k] = numberOrNull(form[k]);
    if (Object.keys(quotas).length) body.quotas = quotas;
    if (changed('rate_limit') || changed('rate_window_ms')) {
      const limit = numberOrNull(form.rate_limit);
      const window = numberOrNull(form.rate_window_ms);
      body.rate_limit = limit === null && window === null ? null : { limit, window_ms: window ?? 1000 };
    }
    if (changed('managed_versioning')) body.managed_versioning = form.managed_versioning === 'true';
    if (changed('protected')) body.protected = form.protected === 'true';
    if (changed('drop_profile')) body.drop_profile = form.drop_profile || null;
    if (changed('drop_retention_seconds')) body.drop_retention_seconds = numberOrNull(form.drop_retention_seconds);
    if (changed('properties')) {
      try {
        body.properties = JSON.parse(form.properties) as unknown;
      } catch {
        return setError('Properties: not valid JSON (an object of strings, such as {"owner": "team-a"})');
      }
    }
    if (changed('allowed_cidrs') || changed('private_only')) {
      const rules: Record<string, unknown> = {};
      if (changed('allowed_cidrs')) rules.allowed_cidrs = form.allowed_cidrs.split(/[\s,]+/).filter(Boolean);
      if (changed('private_only')) rules.private_only = form.private_only === 'true';
      body.network_rules = rules;
    }
    if (!Object.keys(body).length) return setSaved('Nothing changed.');
    // A non-number typed in a number field goes as NaN, which JSON sends as null: send the text instead, for the
    // API to refuse with its message.
    const json = JSON.stringify(body, (_k, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? 'not a number' : v));
    const r = await api.PATCH('/admin/v1/databases/{name}', {
      params: { path: { name: db.name } },
      body: JSON.parse(json) as Change,
    });
    if (r.error) return setError(problemText(r.error, r.response));
    onSaved(r.data);
    setForm(formOf(r.data));
    setSaved(`Saved: ${Object.keys(body).join(', ')}.`);
  };

  return (
    <section aria-labelledby="edit-title">
      <h2 id="edit-title">Edit settings</h2>
      <form class="inline" onSubmit={save} aria-label="Edit settings">
        <p class="hint">Only the fields you change are sent. An empty quota is the gateway's default (no limit unless it sets one).</p>
        {QUOTAS.map(([k, label]) => (
          <span key={k}>
            <label for={`q-${k}`}>{label}</label> <input id={`q-${k}`} inputMode="numeric" size={12} value={form[k]} onInput={set(k)} />
          </span>
        ))}
        <p class="hint">Rate limit: empty is the server default.</p>
        <label for="rl-limit">Rate limit (requests)</label>
        <input id="rl-limit" inputMode="numeric" size={8} value={form.rate_limit} onInput={set('rate_limit')} />
        <label for="rl-window">per window (ms)</label>
        <input id="rl-window" inputMode="numeric" size={8} value={form.rate_window_ms} placeholder="1000" onInput={set('rate_window_ms')} />
        <p />
        <label for="drop-profile">Drop profile</label>
        <select id="drop-profile" value={form.drop_profile} onChange={set('drop_profile')}>
          <option value="">server default</option>
          <option value="hard">hard (deleted at once)</option>
          <option value="soft">soft (kept, undrop)</option>
        </select>
        <label for="drop-retention">Soft-drop retention (seconds)</label>
        <input
          id="drop-retention"
          inputMode="numeric"
          size={10}
          value={form.drop_retention_seconds}
          onInput={set('drop_retention_seconds')}
        />
        <p />
        <input
          id="managed-versioning"
          type="checkbox"
          checked={form.managed_versioning === 'true'}
          onChange={setBool('managed_versioning')}
        />
        <label for="managed-versioning">Managed versioning (only while it holds no tables)</label>
        <input id="protected" type="checkbox" checked={form.protected === 'true'} onChange={setBool('protected')} />
        <label for="protected">Protected from deletion</label>
        <p />
        <label for="db-properties">Properties (JSON object of strings)</label>
        <textarea id="db-properties" rows={4} cols={40} value={form.properties} onInput={set('properties')} />
        {db.network_rules && (
          <>
            <label for="allowed-cidrs">Allowed source CIDRs (one a line; none: any)</label>
            <textarea id="allowed-cidrs" rows={3} cols={24} value={form.allowed_cidrs} onInput={set('allowed_cidrs')} />
            <input id="private-only" type="checkbox" checked={form.private_only === 'true'} onChange={setBool('private_only')} />
            <label for="private-only">Private endpoints only</label>
          </>
        )}
        <p>
          <button type="submit">Save settings</button>
        </p>
        <Problem text={error} />
        {saved && (
          <p role="status" class="ok">
            {saved}
          </p>
        )}
      </form>
    </section>
  );
}
