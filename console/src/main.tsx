import { render } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { apiClient } from './api';
import { clearSession, loadSession, saveSession, type Session } from './session';
import { SignIn } from './pages/SignIn';
import { Fleet } from './pages/Fleet';
import { DatabaseShell } from './pages/DatabaseShell';
import { dbHref, href } from './nav';
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
          window.location.hash = s.kind === 'operator' ? '#/fleet' : dbHref(s.database, 'tables');
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

  // A database's pages for either kind of session (a database key asking for another database is refused by the API,
  // and the page says so); the fleet for the operator; a database key's own tables otherwise.
  let page;
  if (route[0] === 'db' && route[1]) page = <DatabaseShell session={session} name={route[1]} rest={route.slice(2)} />;
  else if (session.kind === 'operator') page = <Fleet api={api} />;
  else page = <DatabaseShell session={session} name={session.database} rest={[]} />;
  return (
    <>
      <header class="top">
        <strong>Lance Gateway</strong>
        <nav aria-label="Main">
          {session.kind === 'operator' ? (
            <a href={href('fleet')}>Fleet</a>
          ) : (
            <a href={dbHref(session.database, 'tables')}>Database {session.database}</a>
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
