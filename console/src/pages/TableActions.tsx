import { useState } from 'preact/hooks';
import { problemText } from '../api';
import { type Db, can } from '../db';
import { dbHref } from '../nav';

/**
 * What may be done to a table from its page: dropping it (`POST /v1/table/{id}/drop`), confirmed on the page and
 * offered only to a credential that may (`manage`). Then the Dropped tables page (where, under a soft delete profile,
 * it can be restored) for a credential that may see it, the tables otherwise.
 */
export function TableActions({ db, id }: { db: Db; id: string }) {
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState('');
  if (!can(db, 'manage')) return null;
  const name = id.split('$').join(' / ');
  const drop = async () => {
    setConfirming(false);
    const r = await db.api.POST('/v1/table/{id}/drop', { params: { path: { id } } });
    if (r.error) return setError(problemText(r.error, r.response));
    window.location.hash = dbHref(db.name, can(db, 'admin') ? 'dropped' : 'tables');
  };
  return (
    <section aria-labelledby="table-actions-title">
      <h3 id="table-actions-title">Actions</h3>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {confirming ? (
        <div class="secret">
          <p>
            Drop <span class="name">{name}</span>? Under the database&apos;s soft delete profile it can be restored from Dropped tables
            until it is purged; under the hard profile its data is deleted.
          </p>
          <button type="button" class="danger" onClick={() => void drop()}>
            Confirm drop of {name}
          </button>
          <button type="button" onClick={() => setConfirming(false)}>
            Keep it
          </button>
        </div>
      ) : (
        <button type="button" onClick={() => setConfirming(true)}>
          Drop table
        </button>
      )}
    </section>
  );
}
