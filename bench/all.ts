/**
 * `npm run bench`: every benchmark, one after the other (each with its own floor in the same process tree), then one
 * table of the headline figures against the targets of the performance issue: catalog path (list page, describe)
 * against a bare Fastify + pg handler, ingest against the engine's own write of the same Arrow bytes (local disk and
 * a local S3 server), vector query against in-process Lance, and memory (idle, peak, after; concurrent writes).
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { waitForQuiet } from './quiet';
import { SummaryRow } from './summary';

const RUNS: Array<{ script: string; env?: Record<string, string> }> = [
  { script: 'list-tables.js' },
  { script: 'ingest.js' },
  { script: 'ingest.js', env: { BENCH_STORAGE: 's3' } },
  { script: 'write-budget.js' },
  { script: 'keyed-writes.js' },
  { script: 'maintenance.js' },
  { script: 'events.js' },
  { script: 'fleet.js' },
  { script: 'tables.js' },
];

void (async () => {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'lgw-bench-')), 'summary.jsonl');
  let failed = 0;
  for (const run of RUNS) {
    const label = `${run.script}${
      run.env
        ? ` (${Object.entries(run.env)
            .map(([k, v]) => `${k}=${v}`)
            .join(' ')})`
        : ''
    }`;
    // What the previous benchmark left running (the kernel flushing gigabytes of table files, a server finishing its
    // work) must not fall on the next one (bench/quiet.ts).
    const waited = await waitForQuiet();
    console.log(`\n==== ${label} (after ${waited.toFixed(0)} s waiting for a quiet machine)`);
    const r = spawnSync(process.execPath, [path.join(__dirname, run.script)], {
      stdio: 'inherit',
      env: { ...process.env, ...run.env, BENCH_SUMMARY_FILE: file },
    });
    if (r.status !== 0) {
      failed++;
      console.log(`==== ${label} failed (exit ${r.status})`);
    }
  }
  const rows: SummaryRow[] = fs.existsSync(file)
    ? fs
        .readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as SummaryRow)
    : [];
  fs.rmSync(path.dirname(file), { recursive: true, force: true });
  const cols: Array<keyof SummaryRow> = ['what', 'gateway', 'floor', 'ratio', 'target'];
  const width = Object.fromEntries(cols.map((c) => [c, Math.max(c.length, ...rows.map((r) => String(r[c]).length))])) as Record<
    string,
    number
  >;
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(width[cols[i]])).join(' | ')} | |`;
  console.log(
    `\n==== summary (${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} cores, ${os.cpus()[0]?.model ?? 'cpu'}, load average ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')})\n`,
  );
  console.log(line(cols.map(String)).replace(/ \|$/, ' met |'));
  console.log(`|${cols.map((c) => '-'.repeat(width[c] + 2)).join('|')}|-----|`);
  for (const r of rows) console.log(line(cols.map((c) => String(r[c]))).replace(/ \|$/, ` ${r.ok ? 'yes' : 'no '} |`));
  if (failed) {
    console.log(`\n${failed} benchmark(s) failed`);
    process.exit(1);
  }
})();
