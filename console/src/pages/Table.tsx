import { useEffect, useState } from 'preact/hooks';
import { tableFromIPC } from 'apache-arrow';
import { type Api, problemText } from '../api';
import type { components } from '../../generated/api';
import { cell } from '../format';
import type { Db } from '../db';
import { TableActions } from './TableActions';

type Described = components['schemas']['DescribeTableResponse'];
type Field = components['schemas']['JsonArrowField'];

const PREVIEW_ROWS = 20;

/** A table: its schema (describe), properties and a preview of its first rows (a query, read as Arrow). */
export function TablePage({ db, id }: { db: Db; id: string }) {
  const api = db.api;
  const [table, setTable] = useState<Described>();
  const [error, setError] = useState('');
  useEffect(() => {
    api
      .POST('/v1/table/{id}/describe', { params: { path: { id } }, body: {} })
      .then((r) => (r.error ? setError(problemText(r.error, r.response)) : setTable(r.data)))
      .catch((err: unknown) => setError(problemText(err)));
  }, [api, id]);
  const name = id.split('$');
  return (
    <section aria-labelledby="table-title">
      <h2 id="table-title">
        Table <span class="name">{name.join(' / ')}</span>
      </h2>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {table && (
        <>
          <p>
            Version {table.version ?? '—'}
            {table.is_only_declared ? ' (declared, no data yet)' : ''}
          </p>
          {Object.keys(table.properties ?? {}).length > 0 && (
            <>
              <h3>Properties</h3>
              <dl class="facts" aria-label="Table properties">
                {Object.entries(table.properties).map(([k, v]) => (
                  <div key={k}>
                    <dt>{k}</dt>
                    <dd>{v}</dd>
                  </div>
                ))}
              </dl>
            </>
          )}
          <h3>Schema</h3>
          {table.schema ? <Schema fields={table.schema.fields} /> : <p>No schema (the table has no data yet).</p>}
          {!table.is_only_declared && <Preview api={api} id={id} />}
          <TableActions db={db} id={id} />
        </>
      )}
    </section>
  );
}

function typeText(f: Field): string {
  const t = f.type as { type?: string; fields?: Field[]; length?: number } | undefined;
  if (!t) return '?';
  const inner = t.fields?.length ? `<${t.fields.map(typeText).join(', ')}>` : '';
  return `${t.type ?? '?'}${t.length !== undefined ? `[${t.length}]` : ''}${inner}`;
}

function Schema({ fields }: { fields: Field[] }) {
  return (
    <table class="grid" aria-label="Schema">
      <thead>
        <tr>
          <th scope="col">Column</th>
          <th scope="col">Type</th>
          <th scope="col">Nullable</th>
        </tr>
      </thead>
      <tbody>
        {fields.map((f) => (
          <tr key={f.name}>
            <td>{f.name}</td>
            <td>
              <code>{typeText(f)}</code>
            </td>
            <td>{f.nullable ? 'yes' : 'no'}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Preview({ api, id }: { api: Api; id: string }) {
  const [rows, setRows] = useState<{ columns: string[]; rows: unknown[][]; ms: number }>();
  const [error, setError] = useState('');
  useEffect(() => {
    const started = performance.now();
    api
      .POST('/v1/table/{id}/query', {
        params: { path: { id } },
        body: { vector: [], k: PREVIEW_ROWS, prefilter: true },
        parseAs: 'arrayBuffer',
      })
      .then((r) => {
        if (r.error) return setError(problemText(r.error, r.response));
        const t = tableFromIPC(new Uint8Array(r.data as unknown as ArrayBuffer));
        const columns = t.schema.fields.map((f) => f.name);
        const out: unknown[][] = [];
        for (let i = 0; i < Math.min(t.numRows, PREVIEW_ROWS); i++) {
          const row = t.get(i);
          out.push(columns.map((c) => (row as Record<string, unknown> | null)?.[c]));
        }
        setRows({ columns, rows: out, ms: Math.round(performance.now() - started) });
      })
      .catch((err: unknown) => setError(problemText(err)));
  }, [api, id]);
  return (
    <section aria-labelledby="preview-title">
      <h3 id="preview-title">First rows</h3>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {rows && (
        <>
          <p class="hint">
            {rows.rows.length} row{rows.rows.length === 1 ? '' : 's'} in {rows.ms} ms
          </p>
          <div class="scroll" tabIndex={0} aria-label="Row preview, scrollable">
            <table class="grid" aria-label="Rows">
              <thead>
                <tr>
                  {rows.columns.map((c) => (
                    <th scope="col" key={c}>
                      {c}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {rows.rows.map((r, i) => (
                  <tr key={i}>
                    {r.map((v, j) => (
                      <td key={j}>{cell(v)}</td>
                    ))}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
    </section>
  );
}
