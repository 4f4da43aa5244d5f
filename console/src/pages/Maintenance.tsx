import { useEffect, useState } from 'preact/hooks';
import { type Api, problemText } from '../api';
import type { components } from '../../generated/api';
import { Problem } from '../problem';

type Answer = components['schemas']['DatabaseMaintenanceResponse'];
type Policy = Answer['server_defaults'];

const FIELDS = [
  ['compact_min_fragments', 'Compact at fragments (at least 2)'],
  ['index_min_unindexed_rows', 'Index at unindexed rows (at least 1)'],
  ['cleanup_retention_seconds', 'Cleanup retention (seconds)'],
  ['max_concurrent', 'Jobs at once (1 to 64)'],
] as const;
type NumberField = (typeof FIELDS)[number][0];

/**
 * A database's maintenance policy (operator): what the database sets, over the server's defaults
 * (`GET/PUT /admin/v1/databases/{name}/maintenance`). The PUT replaces the database's settings: an empty field is the
 * server's default.
 */
export function Maintenance({ api, name }: { api: Api; name: string }) {
  const [answer, setAnswer] = useState<Answer>();
  const [form, setForm] = useState<Record<string, string>>({});
  const [error, setError] = useState('');
  const [saved, setSaved] = useState('');

  const show = (a: Answer) => {
    setAnswer(a);
    const m = a.maintenance ?? {};
    const f: Record<string, string> = { enabled: m.enabled === undefined ? '' : String(m.enabled) };
    for (const [k] of FIELDS) f[k] = m[k] === undefined ? '' : String(m[k]);
    setForm(f);
  };
  useEffect(() => {
    let live = true;
    api
      .GET('/admin/v1/databases/{name}/maintenance', { params: { path: { name } } })
      .then((r) => live && (r.error ? setError(problemText(r.error, r.response)) : show(r.data)))
      .catch((err: unknown) => live && setError(problemText(err)));
    return () => {
      live = false;
    };
  }, [api, name]);

  const save = async (e: Event) => {
    e.preventDefault();
    setError('');
    setSaved('');
    const body: Policy = {};
    if (form.enabled) body.enabled = form.enabled === 'true';
    for (const [k, label] of FIELDS) {
      const v = (form[k] ?? '').trim();
      if (!v) continue;
      const n = Number(v);
      if (!Number.isFinite(n)) return setError(`${label}: not a number`);
      body[k as NumberField] = n;
    }
    const r = await api.PUT('/admin/v1/databases/{name}/maintenance', { params: { path: { name } }, body });
    if (r.error) return setError(problemText(r.error, r.response));
    show(r.data);
    setSaved('Maintenance policy saved.');
  };

  const d = answer?.server_defaults;
  return (
    <section aria-labelledby="maintenance-title">
      <h2 id="maintenance-title">Maintenance policy</h2>
      <Problem text={error} />
      {answer && d && (
        <form class="inline" onSubmit={save} aria-label="Maintenance policy">
          <p class="hint">Empty: the server's default (shown in brackets). Tables and namespaces may override it by properties.</p>
          <label for="mnt-enabled">Automatic maintenance</label>
          <select id="mnt-enabled" value={form.enabled ?? ''} onChange={(e) => setForm({ ...form, enabled: e.currentTarget.value })}>
            <option value="">server default ({d.enabled ? 'on' : 'off'})</option>
            <option value="true">on</option>
            <option value="false">off</option>
          </select>
          {FIELDS.map(([k, label]) => (
            <span key={k}>
              <label for={`mnt-${k}`}>{label}</label>{' '}
              <input
                id={`mnt-${k}`}
                inputMode="numeric"
                size={10}
                value={form[k] ?? ''}
                placeholder={d[k] === undefined ? '' : `[${d[k]}]`}
                onInput={(e) => setForm({ ...form, [k]: e.currentTarget.value })}
              />
            </span>
          ))}
          <button type="submit">Save maintenance policy</button>
          {saved && (
            <span role="status" class="ok">
              {saved}
            </span>
          )}
        </form>
      )}
    </section>
  );
}
