import { render } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { apiClient } from './api';
import { clearSession, loadSession, saveSession, type Session } from './session';
import { SignIn } from './pages/SignIn';
import { Fleet } from './pages/Fleet';
import { DatabasePage } from './pages/Database';
import { Tables } from './pages/Tables';
import { TablePage } from './pages/Table';
import { href } from './nav';
import './style.css';

/** The route is the URL's fragment (#/db/acme): never a credential, only names the user already sees. */
function useRoute(): string[] {
  const read = () =>
    window.location.hash
      .replace(/^#\/?/, '')
      .split('/')
      .filter(Boolean)
      .map((s) => decodeURIComponent(s));
  const [route, setRoute] = useState(read);
  useEffect(() => {
    const on = () => setRoute(read());
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return route;
}

function App() {
  const [session, setSession] = useState<Session | undefined>(loadSession);
  const route = useRoute();
  const api = useMemo(() => (session ? apiClient(session) : undefined), [session]);

  if (!session || !api) {
    return (
      <SignIn
        onSignedIn={(s) => {
          saveSession(s);
          window.location.hash = s.kind === 'operator' ? '#/fleet' : '#/tables';
          setSession(s);
        }}
      />
    );
  }
  const signOut = () => {
    clearSession();
    window.location.hash = '';
    setSession(undefined);
  };

  let page;
  if (session.kind === 'operator') {
    if (route[0] === 'db' && route[1]) page = <DatabasePage api={api} name={route[1]} />;
    else page = <Fleet api={api} />;
  } else {
    if (route[0] === 'table' && route[1]) page = <TablePage api={api} id={route[1]} />;
    else if (route[0] === 'keys') page = <DatabasePage api={api} name={session.database} databaseKey />;
    else page = <Tables api={api} />;
  }
  return (
    <>
      <header class="top">
        <strong>Lance Gateway</strong>
        <nav aria-label="Main">
          {session.kind === 'operator' ? (
            <a href={href('fleet')}>Fleet</a>
          ) : (
            <>
              <a href={href('tables')}>Tables</a>
              <a href={href('keys')}>API keys</a>
            </>
          )}
        </nav>
        <span class="who">{session.kind === 'operator' ? 'operator' : `database ${session.database}`}</span>
        <button type="button" onClick={signOut}>
          Sign out
        </button>
      </header>
      <main>{page}</main>
    </>
  );
}

render(<App />, document.getElementById('app')!);
