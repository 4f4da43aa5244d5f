import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { useEffect, useRef } from 'preact/hooks';
import { num } from './format';

export interface Series {
  label: string;
  values: (number | null)[];
  /** How a value reads in the data table (numbers by default). */
  format?: (v: number | null) => string;
}

const COLORS = ['#1f5fbf', '#c0392b', '#2e8b57', '#8e44ad', '#d35400', '#555'];

/**
 * A time-series chart (uPlot, drawn on a canvas) with its data as a table beside it: the table is what a screen
 * reader (and a test) reads, the canvas is the picture of it. `x` is in seconds since the epoch (UTC).
 */
export function Chart({ title, x, series, hourly = false }: { title: string; x: number[]; series: Series[]; hourly?: boolean }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const width = Math.max(320, Math.min(900, el.clientWidth || 640));
    const plot = new uPlot(
      {
        width,
        height: 220,
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
        series: [
          {},
          ...series.map((s, i) => ({ label: s.label, stroke: COLORS[i % COLORS.length], width: 2, points: { show: x.length < 60 } })),
        ],
        axes: [{}, { values: (_u, ticks) => ticks.map((t) => (series[0]?.format ?? num)(t)), size: 70 }],
        legend: { show: true },
      },
      [x, ...series.map((s) => s.values)],
      el,
    );
    return () => plot.destroy();
  }, [x, series]);
  const label = (t: number) =>
    new Date(t * 1000)
      .toISOString()
      .slice(0, hourly ? 16 : 10)
      .replace('T', ' ');
  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      <div ref={box} role="img" aria-label={`Chart: ${title} (its data is in the table that follows)`} />
      <details>
        <summary>Data of {title}</summary>
        <table class="grid" aria-label={`${title} data`}>
          <thead>
            <tr>
              <th scope="col">{hourly ? 'Hour (UTC)' : 'Day (UTC)'}</th>
              {series.map((s) => (
                <th scope="col" key={s.label}>
                  {s.label}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {x.map((t, i) => (
              <tr key={t}>
                <td>{label(t)}</td>
                {series.map((s) => (
                  <td class="n" key={s.label}>
                    {(s.format ?? num)(s.values[i])}
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </figure>
  );
}
