import { useEffect, useState } from 'preact/hooks';
import { type Api, objectId, problemText } from '../api';
import type { Db } from '../db';
import { dbHref } from '../nav';
import { Problem } from '../problem';

const PAGE = 50;

/**
 * A database's catalog: the namespace tree (children loaded when a namespace is opened, a page at a time) and the
 * selected namespace's properties and tables (server-side pages).
 */
export function Tables({ db }: { db: Db }) {
  const api = db.api;
  const [selected, setSelected] = useState<string[]>([]);
  return (
    <section aria-labelledby="tables-title" class="split">
      <h2 id="tables-title">Namespaces and tables</h2>
      <nav aria-label="Namespaces" class="tree">
        <ul role="tree" aria-label="Namespace tree">
          <NamespaceNode api={api} path={[]} selected={selected} onSelect={setSelected} />
        </ul>
      </nav>
      <NamespaceView api={api} database={db.name} path={selected} key={objectId(selected)} />
    </section>
  );
}

function NamespaceNode({
  api,
  path,
  selected,
  onSelect,
}: {
  api: Api;
  path: string[];
  selected: string[];
  onSelect: (p: string[]) => void;
}) {
  const [open, setOpen] = useState(path.length === 0);
  const [children, setChildren] = useState<string[]>([]);
  const [next, setNext] = useState<string | undefined>();
  const [loaded, setLoaded] = useState(false);
  const [error, setError] = useState('');

  const load = async (token?: string) => {
    const r = await api.GET('/v1/namespace/{id}/list', {
      params: { path: { id: objectId(path) }, query: { limit: PAGE, page_token: token } },
    });
    if (r.error) return setError(problemText(r.error, r.response));
    setChildren((c) => (token ? [...c, ...r.data.namespaces] : r.data.namespaces));
    setNext(r.data.page_token);
    setLoaded(true);
  };
  useEffect(() => {
    if (open && !loaded) load().catch((err: unknown) => setError(problemText(err)));
  }, [open]);

  const label = path.length ? path[path.length - 1] : '(root)';
  const isSelected = objectId(path) === objectId(selected);
  return (
    <li role="treeitem" aria-expanded={open} aria-selected={isSelected}>
      <button type="button" class="toggle" aria-label={`${open ? 'Collapse' : 'Expand'} ${label}`} onClick={() => setOpen(!open)}>
        {open ? '▾' : '▸'}
      </button>
      <button type="button" class={isSelected ? 'ns selected' : 'ns'} onClick={() => onSelect(path)}>
        {label}
      </button>
      {error && (
        <span role="alert" class="error">
          {error}
        </span>
      )}
      {open && (
        <ul role="group">
          {children.map((c) => (
            <NamespaceNode key={c} api={api} path={[...path, c]} selected={selected} onSelect={onSelect} />
          ))}
          {next && (
            <li>
              <button type="button" onClick={() => void load(next)}>
                More namespaces
              </button>
            </li>
          )}
        </ul>
      )}
    </li>
  );
}

function NamespaceView({ api, database, path }: { api: Api; database: string; path: string[] }) {
  const id = objectId(path);
  const [properties, setProperties] = useState<Record<string, string>>();
  const [tables, setTables] = useState<string[]>();
  const [prefix, setPrefix] = useState('');
  const [typed, setTyped] = useState('');
  const [token, setToken] = useState<string | undefined>();
  const [history, setHistory] = useState<(string | undefined)[]>([]);
  const [next, setNext] = useState<string | undefined>();
  const [error, setError] = useState('');

  useEffect(() => {
    let live = true;
    if (path.length === 0) return setProperties(undefined);
    api
      .POST('/v1/namespace/{id}/describe', { params: { path: { id } }, body: {} })
      .then((r) => live && (r.error ? setError(problemText(r.error, r.response)) : setProperties(r.data.properties ?? {})))
      .catch((err: unknown) => live && setError(problemText(err)));
    return () => {
      live = false;
    };
  }, [api, id]);
  useEffect(() => {
    let live = true;
    const load = async () => {
      // By prefix: the API's `prefix` filter (one index range), paged like the whole list.
      const r = await api.GET('/v1/namespace/{id}/table/list', {
        params: { path: { id }, query: { limit: PAGE, page_token: token, include_declared: true, ...(prefix ? { prefix } : {}) } },
      });
      if (!live) return;
      if (r.error) return setError(problemText(r.error, r.response));
      setError('');
      setTables(r.data.tables);
      setNext(r.data.page_token);
    };
    load().catch((err: unknown) => live && setError(problemText(err)));
    return () => {
      live = false;
    };
  }, [api, id, token, prefix]);

  const title = path.length ? path.join(' / ') : '(root)';
  return (
    <section aria-labelledby="ns-title" class="detail">
      <h2 id="ns-title">
        Namespace <span class="name">{title}</span>
      </h2>
      <Problem text={error} />
      {properties && Object.keys(properties).length > 0 && (
        <dl class="facts" aria-label="Namespace properties">
          {Object.entries(properties).map(([k, v]) => (
            <div key={k}>
              <dt>{k}</dt>
              <dd>{v}</dd>
            </div>
          ))}
        </dl>
      )}
      <h3>Tables</h3>
      <form
        class="inline"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          setPrefix(typed.trim());
          setToken(undefined);
          setHistory([]);
        }}
      >
        <label>
          Table name prefix <input type="search" value={typed} onInput={(e) => setTyped(e.currentTarget.value)} />
        </label>
        <button type="submit">Search tables</button>
      </form>
      {tables && tables.length === 0 && <p>{prefix ? `No table name starts with “${prefix}”.` : 'No tables in this namespace.'}</p>}
      <ul class="tables" aria-label="Tables">
        {tables?.map((t) => (
          <li key={t}>
            <a href={dbHref(database, 'table', objectId([...path, t]))}>{t}</a>
          </li>
        ))}
      </ul>
      <div class="pager">
        <button
          type="button"
          disabled={history.length === 0}
          onClick={() => {
            setToken(history[history.length - 1]);
            setHistory(history.slice(0, -1));
          }}
        >
          Previous tables
        </button>
        <span class="hint" aria-live="polite">
          Page {history.length + 1}
        </span>
        <button
          type="button"
          disabled={!next}
          onClick={() => {
            setHistory([...history, token]);
            setToken(next);
          }}
        >
          Next tables
        </button>
      </div>
    </section>
  );
}
