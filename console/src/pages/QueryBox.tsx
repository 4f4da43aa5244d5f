import { useEffect, useState } from 'preact/hooks';
import { tableFromIPC } from 'apache-arrow';
import { type Api, problemText } from '../api';
import type { components } from '../../generated/api';
import { cell } from '../format';
import { Problem } from '../problem';

type Field = components['schemas']['JsonArrowField'];
type QueryBody = components['schemas']['QueryTableRequest'];

/** Rows read from a query's Arrow IPC answer: column names, and each row's values in that order. */
export interface Rows {
  columns: string[];
  rows: unknown[][];
}

export function readRows(data: ArrayBuffer, max = Infinity): Rows {
  const t = tableFromIPC(new Uint8Array(data));
  const columns = t.schema.fields.map((f) => f.name);
  const rows: unknown[][] = [];
  for (let i = 0; i < Math.min(t.numRows, max); i++) {
    const row = t.get(i) as Record<string, unknown> | null;
    rows.push(columns.map((c) => row?.[c]));
  }
  return { columns, rows };
}

/** A query through `POST /v1/table/{id}/query` (answered as Arrow IPC), read into rows, with the time it took. */
export async function runQuery(api: Api, id: string, body: QueryBody, max?: number): Promise<Rows & { ms: number }> {
  const started = performance.now();
  const r = await api.POST('/v1/table/{id}/query', { params: { path: { id } }, body, parseAs: 'arrayBuffer' });
  if (r.error) throw new Error(problemText(r.error, r.response));
  const rows = readRows(r.data as unknown as ArrayBuffer, max);
  return { ...rows, ms: Math.round(performance.now() - started) };
}

/** The table of a query's rows (long vectors abbreviated), with an optional action per row. */
export function RowsTable({
  label,
  data,
  action,
}: {
  label: string;
  data: Rows;
  action?: { name: string; label: (i: number) => string; run: (row: unknown[]) => void };
}) {
  return (
    <div class="scroll" tabIndex={0} aria-label={`${label}, scrollable`}>
      <table class="grid" aria-label={label}>
        <thead>
          <tr>
            {action && <th scope="col">{action.name}</th>}
            {data.columns.map((c) => (
              <th scope="col" key={c}>
                {c}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {data.rows.map((r, i) => (
            <tr key={i}>
              {action && (
                <td>
                  <button type="button" onClick={() => action.run(r)}>
                    {action.label(i)}
                  </button>
                </td>
              )}
              {r.map((v, j) => (
                <td key={j}>{cell(v)}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Whether a column holds vectors: a (fixed-size) list of floats. */
export function isVector(f: Field): boolean {
  const t = f.type as { type?: string; fields?: Field[] } | undefined;
  const item = (t?.fields?.[0]?.type as { type?: string } | undefined)?.type ?? '';
  return /list/i.test(t?.type ?? '') && /float|halffloat|double/i.test(item);
}

/** The numbers of a vector value (an Arrow list, a typed array or an array), or undefined. */
export function numbersOf(v: unknown): number[] | undefined {
  const list = v as { toArray?: () => ArrayLike<unknown> } | null | undefined;
  const items =
    typeof list?.toArray === 'function'
      ? list.toArray()
      : ArrayBuffer.isView(v) || Array.isArray(v)
        ? (v as ArrayLike<unknown>)
        : undefined;
  if (!items) return undefined;
  return Array.from(items, Number);
}

/** A vector typed as JSON (`[0.1, 0.2]`) or as a list of numbers separated by commas or spaces. */
export function parseVector(text: string): number[] {
  const inner = text.trim().replace(/^\[/, '').replace(/\]$/, '').trim();
  if (!inner) throw new Error('The vector is empty.');
  const values = inner.split(/[\s,]+/).map((x) => Number(x));
  if (values.some((x) => !Number.isFinite(x))) throw new Error('The vector must be numbers, as JSON or separated by commas.');
  return values;
}

type Mode = 'filter' | 'vector' | 'fts';

/**
 * The query box: a filter (SQL `where`), optionally with a vector search (a vector column, a vector typed or taken
 * from a row of the preview, k) or a full-text search (a column with a full-text index). The rows found, the time
 * taken, and the API's message when it refuses the query.
 */
export function QueryBox({
  api,
  id,
  fields,
  ftsColumns,
  picked,
}: {
  api: Api;
  id: string;
  fields: Field[];
  ftsColumns: string[];
  /** A row of the preview whose vector to search with (its values by column name), and when it was picked. */
  picked?: { values: Record<string, unknown>; at: number };
}) {
  const vectorColumns = fields.filter(isVector).map((f) => f.name);
  const [mode, setMode] = useState<Mode>('filter');
  const [filter, setFilter] = useState('');
  const [vectorColumn, setVectorColumn] = useState(vectorColumns[0] ?? '');
  const [vector, setVector] = useState('');
  const [ftsColumn, setFtsColumn] = useState(ftsColumns[0] ?? '');
  const [text, setText] = useState('');
  const [k, setK] = useState(10);
  const [result, setResult] = useState<Rows & { ms: number; n: number }>();
  const [runs, setRuns] = useState(0);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    if (!ftsColumn && ftsColumns[0]) setFtsColumn(ftsColumns[0]);
  }, [ftsColumns.join('\n')]);
  useEffect(() => {
    if (!picked) return;
    const values = numbersOf(picked.values[vectorColumn]);
    if (!values) return setError(`The row has no vector in column ${vectorColumn}.`);
    setMode('vector');
    setVector(JSON.stringify(values));
    setError('');
  }, [picked?.at]);

  const run = async () => {
    const body: QueryBody = { k, prefilter: true, vector: [] };
    if (filter.trim()) body.filter = filter.trim();
    if (mode === 'vector') {
      body.vector = parseVector(vector);
      body.vector_column = vectorColumn;
    } else if (mode === 'fts') {
      if (!text.trim()) throw new Error('Type the words to search for.');
      body.full_text_query = { string_query: { query: text.trim(), columns: [ftsColumn] } };
    }
    return runQuery(api, id, body);
  };
  const submit = (e: Event) => {
    e.preventDefault();
    const n = runs + 1;
    setRuns(n);
    setBusy(true);
    setError('');
    run()
      .then((r) => setResult({ ...r, n }))
      .catch((err: unknown) => {
        setResult(undefined);
        setError(err instanceof Error ? err.message : problemText(err));
      })
      .finally(() => setBusy(false));
  };

  return (
    <section aria-labelledby="query-title">
      <h3 id="query-title">Query</h3>
      <form class="inline" onSubmit={submit} aria-label="Query the table">
        <label for="query-mode">Search</label>
        <select id="query-mode" value={mode} onChange={(e) => setMode(e.currentTarget.value as Mode)}>
          <option value="filter">Filter only</option>
          {vectorColumns.length > 0 && <option value="vector">Vector search</option>}
          {ftsColumns.length > 0 && <option value="fts">Full-text search</option>}
        </select>
        <label for="query-filter">Filter (SQL where)</label>
        <input
          id="query-filter"
          type="text"
          value={filter}
          placeholder="id > 10 AND text LIKE 'a%'"
          onInput={(e) => setFilter(e.currentTarget.value)}
        />
        {mode === 'vector' && (
          <>
            <label for="query-vector-column">Vector column</label>
            <select id="query-vector-column" value={vectorColumn} onChange={(e) => setVectorColumn(e.currentTarget.value)}>
              {vectorColumns.map((c) => (
                <option key={c} value={c}>
                  {c}
                </option>
              ))}
            </select>
            <label for="query-vector">Vector (JSON or comma-separated)</label>
            <textarea id="query-vector" rows={3} value={vector} onInput={(e) => setVector(e.currentTarget.value)} />
          </>
        )}
        {mode === 'fts' && (
          <>
            <label for="query-text-column">Text column</label>
            <select id="query-text-column" value={ftsColumn} onChange={(e) => setFtsColumn(e.currentTarget.value)}>
              {ftsColumns.map((c) => (
                <option key={c} value={c}>
                  {c}
                </option>
              ))}
            </select>
            <label for="query-words">Words</label>
            <input id="query-words" type="text" value={text} onInput={(e) => setText(e.currentTarget.value)} />
          </>
        )}
        <label for="query-k">Rows (k)</label>
        <input id="query-k" type="number" min={1} max={1000} value={k} onInput={(e) => setK(Number(e.currentTarget.value) || 10)} />
        <button type="submit" disabled={busy}>
          Run query
        </button>
      </form>
      <Problem text={error} />
      {result && (
        <>
          <p class="hint" role="status">
            Query {result.n}: {result.rows.length} row{result.rows.length === 1 ? '' : 's'} found in {result.ms} ms
          </p>
          <RowsTable label="Query results" data={result} />
        </>
      )}
    </section>
  );
}
