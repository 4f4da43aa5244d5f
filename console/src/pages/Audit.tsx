import { useEffect, useState } from 'preact/hooks';
import { problemText } from '../api';
import type { components } from '../../generated/api';
import type { Db } from '../db';
import { when } from '../format';
import { Pager, usePages } from './Pager';
import { jsonText } from './Jobs';
import { Problem } from '../problem';

type AuditEvent = components['schemas']['AuditTrailResponse']['events'][number];

const PAGE = 50;

/** What the trail is narrowed to (query parameters of the audit route; empty = any). */
interface Filter {
  action: string;
  actor: string;
  target: string;
}
const NONE: Filter = { action: '', actor: '', target: '' };
/** Action prefixes offered as suggestions (any action, or prefix ending in `.`, may be typed). */
const ACTIONS = ['table.', 'namespace.', 'database.', 'api_key.', 'job.', 'table.create', 'table.drop', 'request.refused'];

/**
 * The database's audit trail (`GET /admin/v1/databases/{name}/audit`, newest first, server-side pages of 50): time,
 * actor, action, target and details (as text, abbreviated). The filters (action exact or a prefix ending in `.`,
 * actor and target exact) are the route's query parameters, combined with AND; the pages are pages of the filtered
 * trail.
 */
export function Audit({ db }: { db: Db }) {
  const pages = usePages();
  const [page, setPage] = useState<{ events: AuditEvent[]; next?: string }>();
  const [error, setError] = useState('');
  const [draft, setDraft] = useState<Filter>(NONE);
  const [filter, setFilter] = useState<Filter>(NONE);

  useEffect(() => {
    let live = true;
    const query = {
      limit: PAGE,
      page_token: pages.token,
      ...(filter.action ? { action: filter.action } : {}),
      ...(filter.actor ? { actor: filter.actor } : {}),
      ...(filter.target ? { target: filter.target } : {}),
    };
    db.api
      .GET('/admin/v1/databases/{name}/audit', { params: { path: { name: db.name }, query } })
      .then((r) => {
        if (!live) return;
        if (r.error) {
          setPage(undefined);
          return setError(problemText(r.error, r.response));
        }
        setError('');
        setPage({ events: r.data.events, next: r.data.page_token });
      })
      .catch((err: unknown) => live && setError(problemText(err)));
    return () => {
      live = false;
    };
  }, [db, pages.token, filter]);

  const apply = (f: Filter) => {
    const next = { action: f.action.trim(), actor: f.actor.trim(), target: f.target.trim() };
    setDraft(next);
    setFilter(next);
    pages.first();
  };
  const filtered = Boolean(filter.action || filter.actor || filter.target);

  return (
    <section aria-labelledby="audit-title">
      <h2 id="audit-title">Audit trail</h2>
      <Problem text={error} />
      <form
        class="inline"
        aria-label="Filter events"
        onSubmit={(e) => {
          e.preventDefault();
          apply(draft);
        }}
      >
        <label for="audit-action">Action</label>
        <input
          id="audit-action"
          list="audit-actions"
          placeholder="table.create or table."
          value={draft.action}
          onInput={(e) => setDraft({ ...draft, action: e.currentTarget.value })}
        />
        <datalist id="audit-actions">
          {ACTIONS.map((a) => (
            <option key={a} value={a} />
          ))}
        </datalist>
        <label for="audit-actor">Actor</label>
        <input
          id="audit-actor"
          placeholder="operator or key:<id>"
          value={draft.actor}
          onInput={(e) => setDraft({ ...draft, actor: e.currentTarget.value })}
        />
        <label for="audit-target">Target</label>
        <input
          id="audit-target"
          placeholder="ns$table"
          value={draft.target}
          onInput={(e) => setDraft({ ...draft, target: e.currentTarget.value })}
        />
        <button type="submit">Filter</button>
        <button type="button" disabled={!filtered} onClick={() => apply(NONE)}>
          Clear filters
        </button>
        <p class="hint">
          Action: exact, or a prefix ending in <code>.</code>; actor and target: exact (a table&apos;s target is{' '}
          <code>namespace$table</code>).
        </p>
      </form>
      {page && (
        <>
          <p class="hint">
            {page.events.length} {filtered ? 'matching ' : ''}events on this page
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
              {page.events.map((e) => (
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
