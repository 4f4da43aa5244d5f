import { useState } from 'preact/hooks';
import { apiClient, problemText } from '../api';
import type { Session } from '../session';
import { Problem } from '../problem';

/** Sign-in with the operator key (the whole fleet) or a database key and its database. */
export function SignIn({ onSignedIn }: { onSignedIn: (s: Session) => void }) {
  const [kind, setKind] = useState<'operator' | 'database'>('operator');
  const [key, setKey] = useState('');
  const [database, setDatabase] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);

  const submit = async (e: Event) => {
    e.preventDefault();
    setError('');
    const session: Session = kind === 'operator' ? { kind, key } : { kind, key, database: database.trim() };
    setBusy(true);
    try {
      const api = apiClient(session);
      // The key is checked by a read it must be able to make.
      const r =
        session.kind === 'operator'
          ? await api.GET('/admin/v1/databases', { params: { query: { limit: 1 } } })
          : await api.GET('/v1/namespace/{id}/list', { params: { path: { id: '$' }, query: { limit: 1 } } });
      if (r.error) setError(`Sign-in refused: ${problemText(r.error, r.response)}`);
      else onSignedIn(session);
    } catch (err) {
      setError(problemText(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <main class="signin">
      <h1>Sign in to the Lance Gateway console</h1>
      <form onSubmit={submit}>
        <fieldset>
          <legend>Credential</legend>
          <label>
            <input type="radio" name="kind" checked={kind === 'operator'} onChange={() => setKind('operator')} /> Operator key
          </label>
          <label>
            <input type="radio" name="kind" checked={kind === 'database'} onChange={() => setKind('database')} /> Database key
          </label>
        </fieldset>
        <label for="key">API key</label>
        <input id="key" type="password" autocomplete="off" required value={key} onInput={(e) => setKey(e.currentTarget.value)} />
        {kind === 'database' && (
          <>
            <label for="database">Database</label>
            <input id="database" required pattern="[A-Za-z0-9_.\-]+" value={database} onInput={(e) => setDatabase(e.currentTarget.value)} />
          </>
        )}
        <button type="submit" disabled={busy}>
          Sign in
        </button>
        <Problem text={error} />
        <p class="hint">The key stays in this tab only (session storage) and is sent to this gateway alone.</p>
      </form>
    </main>
  );
}
