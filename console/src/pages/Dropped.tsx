import { useEffect, useState } from 'preact/hooks';
import { objectId, problemText } from '../api';
import type { components } from '../../generated/api';
import type { Db } from '../db';
import { bytes, when } from '../format';
import { dbHref } from '../nav';
import { Pager, usePages } from './Pager';
import { Problem } from '../problem';

type DroppedTable = components['schemas']['DroppedTable'];

/**
 * The database's dropped tables (`POST /v1/dropped_tables/list`, under a soft delete profile; an admin credential):
 * when and by whom each was dropped and when it is purged; restoring one (under its old identifier or a new name
 * and/or namespace) and purging one now, confirmed on the page.
 */
export function Dropped({ db }: { db: Db }) {
  const pages = usePages();
  const [page, setPage] = useState<{ dropped: DroppedTable[]; next?: string }>();
  const [error, setError] = useState('');
  const [done, setDone] = useState<{ text: string; table?: string[] }>();
  const [reload, setReload] = useState(0);
  const [restoring, setRestoring] = useState<string>();
  const [purging, setPurging] = useState<string>();

  useEffect(() => {
    let live = true;
    db.api
      .POST('/v1/dropped_tables/list', { body: { limit: 50, page_token: pages.token } })
      .then((r) => {
        if (!live) return;
        if (r.error) return setError(problemText(r.error, r.response));
        setError('');
        setPage({ dropped: r.data.dropped_tables, next: r.data.page_token });
      })
      .catch((err: unknown) => live && setError(problemText(err)));
    return () => {
      live = false;
    };
  }, [db, pages.token, reload]);

  const purge = async (d: DroppedTable) => {
    setPurging(undefined);
    setDone(undefined);
    const r = await db.api.POST('/v1/dropped_tables/{dropped_id}/purge', { params: { path: { dropped_id: d.id } }, body: {} });
    if (r.error) return setError(problemText(r.error, r.response));
    setError('');
    setDone({ text: `Purged ${d.table.join(' / ')}${r.data.removed ? '' : ' (its data is deleted in the background)'}.` });
    setReload((n) => n + 1);
  };
  const restored = (text: string, table?: string[]) => {
    setRestoring(undefined);
    setError('');
    setDone({ text, table });
    setReload((n) => n + 1);
  };

  return (
    <section aria-labelledby="dropped-title">
      <h2 id="dropped-title">Dropped tables</h2>
      <p class="hint">Tables dropped under a soft delete profile are kept until their purge time and can be restored until then.</p>
      <Problem text={error} />
      <p role="status" class="ok">
        {done?.text}
        {done?.table && (
          <>
            {' '}
            <a href={dbHref(db.name, 'table', objectId(done.table))}>Open {done.table.join(' / ')}</a>
          </>
        )}
      </p>
      {page && page.dropped.length === 0 && <p>No dropped tables.</p>}
      {page && page.dropped.length > 0 && (
        <table class="grid" aria-label="Dropped tables">
          <thead>
            <tr>
              <th scope="col">Table</th>
              <th scope="col">Dropped</th>
              <th scope="col">Dropped by</th>
              <th scope="col">Purged after</th>
              <th scope="col">Last version</th>
              <th scope="col">Size</th>
              <th scope="col">
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {page.dropped.map((d) => {
              const name = d.table.join(' / ');
              return (
                <tr key={d.id}>
                  <td>{name}</td>
                  <td>{when(d.dropped_at)}</td>
                  <td>{d.dropped_by}</td>
                  <td>{when(d.purge_after)}</td>
                  <td class="n">{d.last_version ?? '—'}</td>
                  <td class="n">{bytes(d.storage_bytes)}</td>
                  <td>
                    {restoring === d.id ? (
                      <Restore db={db} d={d} onDone={restored} onError={setError} onCancel={() => setRestoring(undefined)} />
                    ) : purging === d.id ? (
                      <>
                        <button type="button" class="danger" onClick={() => void purge(d)}>
                          Confirm purge of {name}
                        </button>
                        <button type="button" onClick={() => setPurging(undefined)}>
                          Keep it
                        </button>
                      </>
                    ) : (
                      <>
                        <button type="button" aria-label={`Restore ${name}`} onClick={() => setRestoring(d.id)}>
                          Restore
                        </button>
                        <button type="button" aria-label={`Purge ${name}`} onClick={() => setPurging(d.id)}>
                          Purge
                        </button>
                      </>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {page && <Pager pages={pages} next={page.next} label="Dropped tables" />}
    </section>
  );
}

/** Undrop: under the old identifier, or a new name and/or namespace (`a/b`; empty: the old one). */
function Restore({
  db,
  d,
  onDone,
  onError,
  onCancel,
}: {
  db: Db;
  d: DroppedTable;
  onDone: (text: string, table: string[]) => void;
  onError: (text: string) => void;
  onCancel: () => void;
}) {
  const [name, setName] = useState('');
  const [namespace, setNamespace] = useState('');
  const submit = async (e: Event) => {
    e.preventDefault();
    const ns = namespace
      .split('/')
      .map((s) => s.trim())
      .filter(Boolean);
    const r = await db.api.POST('/v1/dropped_tables/{dropped_id}/undrop', {
      params: { path: { dropped_id: d.id } },
      body: { ...(name.trim() ? { new_name: name.trim() } : {}), ...(namespace.trim() ? { new_namespace: ns } : {}) },
    });
    if (r.error) return onError(problemText(r.error, r.response));
    onDone(`Restored ${d.table.join(' / ')} as ${r.data.id.join(' / ')}.`, r.data.id);
  };
  return (
    <form class="inline" aria-label={`Restore ${d.table.join(' / ')}`} onSubmit={(e) => void submit(e)}>
      <label for={`new-name-${d.id}`}>New name (optional)</label>
      <input id={`new-name-${d.id}`} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      <label for={`new-ns-${d.id}`}>New namespace, a/b (optional)</label>
      <input id={`new-ns-${d.id}`} value={namespace} onInput={(e) => setNamespace(e.currentTarget.value)} />
      <button type="submit">Restore table</button>
      <button type="button" onClick={onCancel}>
        Cancel
      </button>
    </form>
  );
}
