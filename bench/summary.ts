import * as fs from 'node:fs';

/**
 * One line of `npm run bench`'s closing table. Each benchmark calls `record` for its headline figures; when run by
 * bench/all.ts (BENCH_SUMMARY_FILE set) they are appended there as JSON lines, otherwise this does nothing.
 */
export interface SummaryRow {
  /** What was measured, e.g. "catalog: describe". */
  what: string;
  /** The gateway's figure, with its unit, e.g. "1,343 req/s, p50 5 ms, p99 36 ms". */
  gateway: string;
  /** The floor's figure, e.g. "4,351 req/s (bare Fastify + pg)". */
  floor: string;
  /** The ratio (or bound) that is judged, e.g. "0.31". */
  ratio: string;
  /** The target it is judged against, e.g. "≥ 0.6". */
  target: string;
  /** Whether it meets the target. */
  ok: boolean;
}

export function record(row: SummaryRow): void {
  const file = process.env.BENCH_SUMMARY_FILE;
  if (file) fs.appendFileSync(file, `${JSON.stringify(row)}\n`);
}
