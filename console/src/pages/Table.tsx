import { useEffect, useState } from 'preact/hooks';
import { type Api, problemText } from '../api';
import type { components } from '../../generated/api';
import { bytes, num } from '../format';
import type { Db } from '../db';
import { TableActions } from './TableActions';
import { TableVersions } from './TableVersions';
import { QueryBox, type Rows, RowsTable, isVector, runQuery } from './QueryBox';
import { Problem } from '../problem';

type Described = components['schemas']['DescribeTableResponse'];
type Field = components['schemas']['JsonArrowField'];
type Stats = components['schemas']['GetTableStatsResponse'];
type Index = components['schemas']['ListTableIndicesResponse']['indexes'][number];
type IndexStats = components['schemas']['DescribeTableIndexStatsResponse'];

const PREVIEW_ROWS = 20;

/**
 * A table: its statistics, versions (with tags and branches), indices, schema (with field metadata), properties, a
 * preview of its first rows and a query box (queries read as Arrow).
 */
export function TablePage({ db, id }: { db: Db; id: string }) {
  const api = db.api;
  const [table, setTable] = useState<Described>();
  const [indices, setIndices] = useState<Index[]>();
  const [picked, setPicked] = useState<{ values: Record<string, unknown>; at: number }>();
  const [error, setError] = useState('');
  useEffect(() => {
    let live = true;
    api
      .POST('/v1/table/{id}/describe', { params: { path: { id }, query: { check_declared: true } }, body: {} })
      .then((r) => live && (r.error ? setError(problemText(r.error, r.response)) : setTable(r.data)))
      .catch((err: unknown) => live && setError(problemText(err)));
    return () => {
      live = false;
    };
  }, [api, id]);
  const hasData = !!table && !table.is_only_declared;
  useEffect(() => {
    let live = true;
    if (!hasData) return;
    api
      .POST('/v1/table/{id}/index/list', { params: { path: { id } }, body: {} })
      .then((r) => live && (r.error ? setError(problemText(r.error, r.response)) : setIndices(r.data.indexes)))
      .catch((err: unknown) => live && setError(problemText(err)));
    return () => {
      live = false;
    };
  }, [api, id, hasData]);
  const name = id.split('$');
  const fields = table?.schema?.fields ?? [];
  const ftsColumns = (indices ?? []).filter((i) => /fts|inverted/i.test(i.index_type)).flatMap((i) => i.columns);
  return (
    <section aria-labelledby="table-title">
      <h2 id="table-title">
        Table <span class="name">{name.join(' / ')}</span>
      </h2>
      <Problem text={error} />
      {table && (
        <>
          <p>
            Version {table.version ?? '—'}
            {table.is_only_declared ? ' (declared, no data yet)' : ''}
          </p>
          {hasData && <TableStats api={api} id={id} indices={indices} />}
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
          {table.schema?.metadata && Object.keys(table.schema.metadata).length > 0 && (
            <dl class="facts" aria-label="Schema metadata">
              {Object.entries(table.schema.metadata).map(([k, v]) => (
                <div key={k}>
                  <dt>{k}</dt>
                  <dd>{v}</dd>
                </div>
              ))}
            </dl>
          )}
          {hasData && (
            <>
              <Indices api={api} id={id} indices={indices} />
              <TableVersions api={api} id={id} />
              <Preview api={api} id={id} fields={fields} onPick={(values) => setPicked({ values, at: Date.now() })} />
              <QueryBox api={api} id={id} fields={fields} ftsColumns={ftsColumns} picked={picked} />
            </>
          )}
          <TableActions db={db} id={id} />
        </>
      )}
    </section>
  );
}

/** Statistics (`GET /v1/table/{id}/stats`), with the unindexed rows of the index that lags most. */
function TableStats({ api, id, indices }: { api: Api; id: string; indices?: Index[] }) {
  const [stats, setStats] = useState<Stats>();
  const [error, setError] = useState('');
  useEffect(() => {
    let live = true;
    api
      .GET('/v1/table/{id}/stats', { params: { path: { id } } })
      .then((r) => live && (r.error ? setError(problemText(r.error, r.response)) : setStats(r.data)))
      .catch((err: unknown) => live && setError(problemText(err)));
    return () => {
      live = false;
    };
  }, [api, id]);
  const unindexed = indices?.length ? Math.max(...indices.map((i) => i.num_unindexed_rows ?? 0)) : undefined;
  return (
    <section aria-labelledby="stats-title">
      <h3 id="stats-title">Statistics</h3>
      <Problem text={error} />
      {stats && (
        <dl class="facts" aria-label="Table statistics">
          <div>
            <dt>Rows</dt>
            <dd>{num(stats.num_rows)}</dd>
          </div>
          <div>
            <dt>Fragments</dt>
            <dd>
              {num(stats.fragment_stats.num_fragments)} ({num(stats.fragment_stats.num_small_fragments)} small)
            </dd>
          </div>
          <div>
            <dt>Bytes</dt>
            <dd>{bytes(stats.total_bytes)}</dd>
          </div>
          <div>
            <dt>Indices</dt>
            <dd>{num(stats.num_indices)}</dd>
          </div>
          <div>
            <dt>Unindexed rows</dt>
            <dd>{indices?.length ? `${num(unindexed)} (the most of any index)` : 'no index'}</dd>
          </div>
        </dl>
      )}
    </section>
  );
}

/** The table's indices, each with its statistics (`POST /v1/table/{id}/index/{name}/stats`). */
function Indices({ api, id, indices }: { api: Api; id: string; indices?: Index[] }) {
  const [stats, setStats] = useState<Record<string, IndexStats>>({});
  useEffect(() => {
    let live = true;
    for (const i of indices ?? []) {
      api
        .POST('/v1/table/{id}/index/{index_name}/stats', { params: { path: { id, index_name: i.index_name } }, body: {} })
        .then((r) => live && r.data && setStats((s) => ({ ...s, [i.index_name]: r.data })))
        .catch(() => undefined);
    }
    return () => {
      live = false;
    };
  }, [api, id, indices]);
  return (
    <section aria-labelledby="indices-title">
      <h3 id="indices-title">Indices</h3>
      {indices && indices.length === 0 && <p>No indices.</p>}
      {indices && indices.length > 0 && (
        <table class="grid" aria-label="Indices">
          <thead>
            <tr>
              <th scope="col">Index</th>
              <th scope="col">Columns</th>
              <th scope="col">Type</th>
              <th scope="col">Status</th>
              <th scope="col">Indexed rows</th>
              <th scope="col">Unindexed rows</th>
              <th scope="col">Size</th>
            </tr>
          </thead>
          <tbody>
            {indices.map((i) => {
              const s = stats[i.index_name];
              return (
                <tr key={i.index_name}>
                  <td>{i.index_name}</td>
                  <td>{i.columns.join(', ')}</td>
                  <td>{i.index_type}</td>
                  <td>{i.status}</td>
                  <td class="n">{num(s?.num_indexed_rows ?? i.num_indexed_rows)}</td>
                  <td class="n">{num(s?.num_unindexed_rows ?? i.num_unindexed_rows)}</td>
                  <td class="n">{bytes(i.size_bytes)}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
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
          <th scope="col">Metadata</th>
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
            <td>
              {Object.entries(f.metadata ?? {})
                .map(([k, v]) => `${k}: ${v}`)
                .join('\n')}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Preview({
  api,
  id,
  fields,
  onPick,
}: {
  api: Api;
  id: string;
  fields: Field[];
  onPick: (values: Record<string, unknown>) => void;
}) {
  const [rows, setRows] = useState<Rows & { ms: number }>();
  const [error, setError] = useState('');
  useEffect(() => {
    let live = true;
    runQuery(api, id, { vector: [], k: PREVIEW_ROWS, prefilter: true }, PREVIEW_ROWS)
      .then((r) => live && setRows(r))
      .catch((err: unknown) => live && setError(err instanceof Error ? err.message : problemText(err)));
    return () => {
      live = false;
    };
  }, [api, id]);
  const withVector = fields.some(isVector);
  return (
    <section aria-labelledby="preview-title">
      <h3 id="preview-title">First rows</h3>
      <Problem text={error} />
      {rows && (
        <>
          <p class="hint">
            {rows.rows.length} row{rows.rows.length === 1 ? '' : 's'} in {rows.ms} ms
          </p>
          <RowsTable
            label="Rows"
            data={rows}
            action={
              withVector
                ? {
                    name: 'Search',
                    label: (i) => `Use the vector of row ${i + 1}`,
                    run: (row) => onPick(Object.fromEntries(rows.columns.map((c, j) => [c, row[j]]))),
                  }
                : undefined
            }
          />
        </>
      )}
    </section>
  );
}
