import { useEffect, useMemo, useState } from 'preact/hooks';
import { type Api, problemText } from '../api';
import type { components } from '../../generated/api';
import { bytes } from '../format';
import { Chart, type Series } from '../chart';
import { Problem } from '../problem';

type Report = components['schemas']['UsageReport'];
type Granularity = Report['granularity'];

/** The range asked for: the last 48 hours (hourly) or the last 30 days (daily). */
function fromOf(granularity: Granularity): string {
  if (granularity === 'hour') return new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000 - 47 * 3_600_000).toISOString();
  return new Date(Date.now() - 29 * 86_400_000).toISOString().slice(0, 10);
}

/**
 * A database's usage over time (`GET /admin/v1/databases/{name}/usage`): requests (reads, writes, throttled and
 * failed ones), rows written, bytes ingested and, per day, storage; hourly (48 h) or
 * daily (30 days), each chart with its data table, and the same rows as a CSV download.
 */
export function Usage({ api, name }: { api: Api; name: string }) {
  const [granularity, setGranularity] = useState<Granularity>('hour');
  const [usage, setUsage] = useState<Report>();
  const [error, setError] = useState('');
  const from = useMemo(() => fromOf(granularity), [granularity]);
  useEffect(() => {
    let live = true;
    setUsage(undefined);
    setError('');
    api
      .GET('/admin/v1/databases/{name}/usage', { params: { path: { name }, query: { granularity, from } } })
      .then((r) => live && (r.error ? setError(problemText(r.error, r.response)) : setUsage(r.data)))
      .catch((err: unknown) => live && setError(problemText(err)));
    return () => {
      live = false;
    };
  }, [api, name, granularity, from]);

  return (
    <section aria-labelledby="usage-title">
      <h2 id="usage-title">Usage</h2>
      <form class="inline" aria-label="Usage range" onSubmit={(e) => e.preventDefault()}>
        <label for="usage-granularity">Granularity</label>
        <select id="usage-granularity" value={granularity} onChange={(e) => setGranularity(e.currentTarget.value as Granularity)}>
          <option value="hour">hourly, last 48 hours</option>
          <option value="day">daily, last 30 days</option>
        </select>
      </form>
      <Problem text={error} />
      {usage && <UsageCharts usage={usage} />}
      <CsvDownload api={api} name={name} granularity={granularity} from={from} />
    </section>
  );
}

function UsageCharts({ usage }: { usage: Report }) {
  const hourly = usage.granularity === 'hour';
  const p = usage.periods;
  const charts = useMemo(() => {
    const x = p.map((r) => Date.parse(r.start) / 1000);
    const requests: Series[] = [
      { label: 'Reads', values: p.map((r) => r.read_requests) },
      { label: 'Writes', values: p.map((r) => r.write_requests) },
      { label: 'Throttled', values: p.map((r) => r.throttled_requests) },
      { label: 'Failed', values: p.map((r) => r.failed_requests) },
    ];
    const list: { title: string; series: Series[] }[] = [
      { title: 'Requests', series: requests },
      { title: 'Rows written', series: [{ label: 'Rows written', values: p.map((r) => r.rows_written) }] },
      { title: 'Bytes ingested', series: [{ label: 'Bytes ingested', values: p.map((r) => r.bytes_ingested), format: bytes }] },
    ];
    if (!hourly)
      list.push({
        title: 'Storage',
        series: [
          { label: 'Storage', values: p.map((r) => r.storage_bytes), format: bytes },
          { label: 'Current versions', values: p.map((r) => r.current_version_bytes), format: bytes },
        ],
      });
    return { x, list };
  }, [p, hourly]);
  if (!p.length) return <p class="hint">No usage recorded in this range.</p>;
  const per = hourly ? 'per hour' : 'per day';
  return (
    <>
      {charts.list.map((c) => (
        <Chart key={`${usage.granularity}-${c.title}`} title={`${c.title} ${per}`} x={charts.x} series={c.series} hourly={hourly} />
      ))}
    </>
  );
}

/** An error answer read as text: its problem body when it is JSON. */
function parsed(text: unknown): unknown {
  if (typeof text !== 'string') return text;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return { detail: text };
  }
}

/**
 * The same rows as CSV (`Accept: text/csv`), fetched with the session's headers (the credential never goes in a
 * URL) and offered as a download of a Blob.
 */
function CsvDownload({ api, name, granularity, from }: { api: Api; name: string; granularity: Granularity; from: string }) {
  const [href, setHref] = useState<string>();
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  // A new range: the old file is not it any more.
  useEffect(() => {
    setHref(undefined);
    setError('');
  }, [granularity, from]);
  useEffect(
    () => () => {
      if (href) URL.revokeObjectURL(href);
    },
    [href],
  );
  const prepare = async () => {
    setBusy(true);
    setError('');
    try {
      const r = await api.GET('/admin/v1/databases/{name}/usage', {
        params: { path: { name }, query: { granularity, from } },
        headers: { accept: 'text/csv' },
        parseAs: 'text',
      });
      if (r.error) return setError(problemText(parsed(r.error), r.response));
      setHref(URL.createObjectURL(new Blob([r.data], { type: 'text/csv' })));
    } catch (err) {
      setError(problemText(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <p>
      {href ? (
        <a href={href} download={`usage-${name}-${granularity}.csv`}>
          Download the CSV ({granularity === 'hour' ? 'hourly' : 'daily'})
        </a>
      ) : (
        <button type="button" disabled={busy} onClick={() => void prepare()}>
          Prepare CSV
        </button>
      )}
      {error && (
        <span role="alert" class="error">
          {' '}
          {error}
        </span>
      )}
    </p>
  );
}
