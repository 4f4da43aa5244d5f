import { useEffect, useMemo, useState } from 'preact/hooks';
import { apiClient, problemText } from '../api';
import { type Credential, type Db, can } from '../db';
import { dbHref } from '../nav';
import type { Session } from '../session';
import { Overview } from './Overview';
import { Keys } from './Keys';
import { Tables } from './Tables';
import { TablePage } from './Table';
import { Jobs } from './Jobs';
import { Audit } from './Audit';
import { Dropped } from './Dropped';
import { Problem } from '../problem';

interface Tab {
  path: string;
  label: string;
  /** Offered only when the credential may use it (the API decides anyway). */
  shown: (db: Db) => boolean;
}

const admin = (db: Db) => can(db, 'admin');
const TABS: Tab[] = [
  { path: 'overview', label: 'Overview', shown: admin },
  { path: 'tables', label: 'Tables', shown: () => true },
  { path: 'jobs', label: 'Jobs', shown: () => true },
  { path: 'audit', label: 'Audit trail', shown: admin },
  { path: 'dropped', label: 'Dropped tables', shown: admin },
  { path: 'keys', label: 'API keys', shown: admin },
];

/**
 * A database's pages, for the operator (any database) or a database key (its own). What the credential may do comes
 * from `GET /v1/credential` before any tab is offered; a credential of another database is refused there, and the
 * page says so.
 */
export function DatabaseShell({ session, name, rest }: { session: Session; name: string; rest: string[] }) {
  const api = useMemo(() => apiClient(session, name), [session, name]);
  const [cred, setCred] = useState<Credential>();
  const [error, setError] = useState('');
  useEffect(() => {
    let live = true;
    setCred(undefined);
    setError('');
    api
      .GET('/v1/credential')
      .then((r) => live && (r.error ? setError(problemText(r.error, r.response)) : setCred(r.data)))
      .catch((err: unknown) => live && setError(problemText(err)));
    return () => {
      live = false;
    };
  }, [api]);

  const db = useMemo(() => (cred ? { api, name, cred } : undefined), [api, name, cred]);
  const tab = rest[0] ?? 'tables';
  let page;
  if (db) {
    if (tab === 'table' && rest[1]) page = <TablePage db={db} id={rest[1]} key={rest[1]} />;
    else if (tab === 'overview') page = <Overview api={api} name={name} operator={cred?.kind === 'operator'} />;
    else if (tab === 'keys') page = <Keys api={api} name={name} />;
    else if (tab === 'jobs') page = <Jobs db={db} />;
    else if (tab === 'audit') page = <Audit db={db} />;
    else if (tab === 'dropped') page = <Dropped db={db} />;
    else page = <Tables db={db} />;
  }
  return (
    <section aria-labelledby="db-title">
      <h1 id="db-title">
        Database <span class="name">{name}</span>
      </h1>
      <Problem text={error} />
      {db && (
        <>
          <nav aria-label="Database" class="tabs">
            {TABS.filter((t) => t.shown(db)).map((t) => (
              <a key={t.path} href={dbHref(name, t.path)} aria-current={t.path === tab ? 'page' : undefined}>
                {t.label}
              </a>
            ))}
            <span class="who">
              {cred?.kind === 'operator' ? 'operator' : `${cred?.role} ${cred?.kind}`}
              {cred?.grants ? ' (with grants)' : ''}
            </span>
          </nav>
          {page}
        </>
      )}
    </section>
  );
}
