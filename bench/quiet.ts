import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';

/** CPU time counters of the whole machine (/proc/stat's first line): idle (idle + iowait) and total, in ticks. */
function cpuTicks(): { idle: number; total: number } {
  const fields = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  return { idle: fields[3] + (fields[4] ?? 0), total: fields.reduce((a, b) => a + b, 0) };
}

/**
 * Waits until the machine is quiet before a timed phase: dirty pages written out (`sync`), then the CPUs at least
 * `idleShare` idle for `seconds` seconds in a row, at most `maxSeconds` in all. What a phase leaves behind goes on
 * after it ends (the kernel flushing a 1.1 GB write, a server still finishing work), and on a 2-core machine that
 * falls on whatever is timed next. The sync before each of `bench:ingest`'s phases is what steadied its ratio
 * (measured: bench/runs/2026-history.md, "Measuring the data plane").
 * Returns how long it waited, in seconds, for the output. Without /proc (not Linux), only the sync.
 */
export async function waitForQuiet(opts: { idleShare?: number; seconds?: number; maxSeconds?: number } = {}): Promise<number> {
  const { idleShare = 0.9, seconds = 3, maxSeconds = 120 } = opts;
  const start = performance.now();
  execFileSync('sync');
  if (!fs.existsSync('/proc/stat')) return (performance.now() - start) / 1000;
  let quiet = 0;
  let last = cpuTicks();
  while (quiet < seconds && performance.now() - start < maxSeconds * 1000) {
    await new Promise((r) => setTimeout(r, 1000));
    const now = cpuTicks();
    const share = (now.idle - last.idle) / Math.max(1, now.total - last.total);
    last = now;
    quiet = share >= idleShare ? quiet + 1 : 0;
  }
  return (performance.now() - start) / 1000;
}
