import { useEffect, useState } from 'preact/hooks';
import { problemText } from '../api';
import type { components } from '../../generated/api';
import type { Db } from '../db';
import { when } from '../format';
import { Pager, usePages } from './Pager';
import { jsonText } from './Jobs';

type AuditEvent = components['schemas']['AuditTrailResponse']['events'][number];

const PAGE = 50;

/** The table an event is about: its `table` detail, or a `table a$b` target. */
function tableOf(e: AuditEvent): string {
  const t = e.details.table;
  if (Array.isArray(t)) return t.join('$');
  if (typeof t === 'string') return t;
  return e.target;
}

/**
 * The database's audit trail (`GET /admin/v1/databases/{name}/audit`, newest first, server-side pages of 50): time,
 * actor, action, target and details (as text, abbreviated). The route takes no filter, so the action, actor and table
 * filters narrow the page shown.
 */
export function Audit({ db }: { db: Db }) {
  const pages = usePages();
  const [page, setPage] = useState<{ events: AuditEvent[]; next?: string }>();
  const [error, setError] = useState('');
  const [action, setAction] = useState('');
  const [actor, setActor] = useState('');
  const [table, setTable] = useState('');

  useEffect(() => {
    let live = true;
    db.api
      .GET('/admin/v1/databases/{name}/audit', { params: { path: { name: db.name }, query: { limit: PAGE, page_token: pages.token } } })
      .then((r) => {
        if (!live) return;
        if (r.error) return setError(problemText(r.error, r.response));
        setError('');
        setPage({ events: r.data.events, next: r.data.page_token });
      })
      .catch((err: unknown) => live && setError(problemText(err)));
    return () => {
      live = false;
    };
  }, [db, pages.token]);

  const actions = [...new Set(page?.events.map((e) => e.action) ?? [])].sort();
  const shown = (page?.events ?? []).filter(
    (e) =>
      (!action || e.action === action) &&
      (!actor.trim() || e.actor.includes(actor.trim())) &&
      (!table.trim() || tableOf(e).includes(table.trim()) || e.target.includes(table.trim())),
  );

  return (
    <section aria-labelledby="audit-title">
      <h2 id="audit-title">Audit trail</h2>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      <form class="inline" aria-label="Filter events" onSubmit={(e) => e.preventDefault()}>
        <label for="audit-action">Action</label>
        <select id="audit-action" value={action} onChange={(e) => setAction(e.currentTarget.value)}>
          <option value="">any</option>
          {actions.map((a) => (
            <option key={a} value={a}>
              {a}
            </option>
          ))}
          {action && !actions.includes(action) && <option value={action}>{action}</option>}
        </select>
        <label for="audit-actor">Actor</label>
        <input id="audit-actor" value={actor} onInput={(e) => setActor(e.currentTarget.value)} />
        <label for="audit-table">Table</label>
        <input id="audit-table" value={table} onInput={(e) => setTable(e.currentTarget.value)} />
        <p class="hint">The filters narrow the page shown (the audit route takes no filter).</p>
      </form>
      {page && (
        <>
          <p class="hint">
            {shown.length} of {page.events.length} events on this page
          </p>
          <table class="grid" aria-label="Audit events">
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Actor</th>
                <th scope="col">Action</th>
                <th scope="col">Target</th>
                <th scope="col">Details</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((e) => (
                <tr key={e.id}>
                  <td>{when(e.created_at)}</td>
                  <td>{e.actor}</td>
                  <td>{e.action}</td>
                  <td>{e.target}</td>
                  <td>
                    <code>{Object.keys(e.details).length ? jsonText(e.details) : ''}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <Pager pages={pages} next={page.next} label="Audit events" />
        </>
      )}
    </section>
  );
}
