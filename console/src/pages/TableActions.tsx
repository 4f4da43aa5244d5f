import { useEffect, useState } from 'preact/hooks';
import { problemText } from '../api';
import { type Db, can } from '../db';
import { dbHref } from '../nav';
import { Problem } from '../problem';

/** A retention in the largest whole unit that fits: `7 days`, `2 hours`, `90 seconds`. */
function duration(s: number): string {
  const units: [number, string][] = [
    [86400, 'day'],
    [3600, 'hour'],
    [60, 'minute'],
  ];
  const [size, unit] = units.find(([size]) => s >= size && s % size === 0) ?? [1, 'second'];
  return `${s / size} ${unit}${s / size === 1 ? '' : 's'}`;
}

/**
 * What may be done to a table from its page: dropping it (`POST /v1/table/{id}/drop`), confirmed on the page and
 * offered only to a credential that may (`manage`). Then the Dropped tables page (where, under a soft delete profile,
 * it can be restored) for a credential that may see it, the tables otherwise.
 */
export function TableActions({ db, id }: { db: Db; id: string }) {
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState('');
  const [profile, setProfile] = useState<{ profile: string; retention_seconds: number }>();
  // Only the operator may read the database's delete profile; others are told what either profile does.
  const operator = db.cred.kind === 'operator';
  useEffect(() => {
    let live = true;
    if (operator && confirming)
      db.api
        .GET('/admin/v1/databases/{name}', { params: { path: { name: db.name } } })
        .then((r) => live && r.data && setProfile(r.data.drop_profile))
        .catch(() => undefined);
    return () => {
      live = false;
    };
  }, [db, operator, confirming]);
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
      <Problem text={error} />
      {confirming ? (
        <div class="secret">
          <p>
            Drop <span class="name">{name}</span>?{' '}
            {profile?.profile === 'soft'
              ? `The database's delete profile is soft: it can be restored from Dropped tables for ${duration(profile.retention_seconds)}, then it is purged.`
              : profile?.profile === 'hard'
                ? "The database's delete profile is hard: its data is deleted, for good."
                : 'Under a soft delete profile it can be restored from Dropped tables until it is purged; under the hard profile its data is deleted.'}
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
