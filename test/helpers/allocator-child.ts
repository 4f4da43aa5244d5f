/**
 * Child program of test/unit/allocator-retention.test.ts, started through scripts/start.sh (so with the allocator
 * `npm start` gives the gateway): drives AllocatorRetention against the process's own jemalloc and prints what it saw
 * as one JSON line. Native memory is allocated and freed through the preloaded allocator itself (koffi), so what is
 * kept and handed back does not depend on when V8 frees its buffers.
 */
import { Registry } from 'prom-client';
import { Jemalloc } from '../../src/platform/runtime/jemalloc';
import { loadConfig } from '../../src/platform/config/config';
import { AllocatorRetention, RETENTION_QUIET_MS } from '../../src/platform/runtime/allocator-retention';
import { WriteBudget } from '../../src/modules/data/writes/write-budget';

const MiB = 1024 * 1024;

async function main(): Promise<void> {
  const config = loadConfig({ DATA_DIR: '/nonexistent', ALLOCATOR_RETAIN_BYTES: process.env.RETAIN ?? String(64 * MiB) });
  const budget = new WriteBudget(config);
  const registry = new Registry();
  const retention = new AllocatorRetention(
    config,
    { httpAdapter: {} } as never,
    { registry } as never,
    {
      get: () => {
        if (process.env.NO_WRITE_ACTIVITY) throw new Error('no provider');
        return budget;
      },
    } as never,
  );
  retention.onApplicationBootstrap();
  retention.pauseTimer(); // the ticks below are the only ones
  await retention.settled();
  const out: Record<string, unknown> = { active: retention.active };
  const je = Jemalloc.open();
  if (!retention.active || typeof je === 'string') {
    console.log(JSON.stringify({ ...out, why: typeof je === 'string' ? je : 'off' }));
    return;
  }
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const koffi = require('koffi') as typeof import('koffi');
  const lib = koffi.load((process.env.LD_PRELOAD ?? '').split(/[\s:]+/).find((p) => p.includes('jemalloc'))!);
  const malloc = lib.func('void *malloc(size_t size)');
  const free = lib.func('void free(void *ptr)');
  const memset = koffi.load('libc.so.6').func('void *memset(void *s, int c, size_t n)');
  /** Allocates, touches and frees `n` blocks of `size` bytes: a read's buffers, as the engine's scans make them. */
  const churn = (n: number, size: number) => {
    const blocks = Array.from({ length: n }, () => {
      const p = malloc(size);
      memset(p, 1, size);
      return p;
    });
    for (const p of blocks) free(p);
  };
  const kept = () => Math.round(je.stats().dirtyBytes / MiB);
  const purged = () => retention.settled();
  const t0 = Date.now() + 10_000; // ticks are driven by hand, with times of their own
  out.decayReading = je.dirtyDecayOf(0);
  out.backgroundReading = je.backgroundThreads();
  churn(1, 32 * MiB); // an oversize block (16 MiB and more): jemalloc makes its oversize arena
  out.oversizeDecayReading = je.dirtyDecayOf(je.oversizeArena);
  retention.tick(t0 - 1);
  retention.tick(t0 - 1 + RETENTION_QUIET_MS);
  await purged();

  retention.tick(t0);
  churn(20, 2 * MiB); // 40 MiB freed, in more large allocations than a quiet tick may see
  out.keptAfterReads = kept();
  retention.tick(t0 + RETENTION_QUIET_MS + 1); // a second after the last tick, but allocations in between: busy
  await purged();
  out.keptAfterBusyTick = kept();
  retention.tick(t0 + 2 * RETENTION_QUIET_MS + 2);
  await purged();
  out.keptAfterQuiet = kept();

  churn(10, 8 * MiB); // 80 MiB freed, past the 64 MiB retained at most
  out.keptBeforeCap = kept();
  retention.tick(t0 + 2 * RETENTION_QUIET_MS + 3); // not quiet: allocations since the last tick
  await purged();
  out.keptAfterCap = kept();

  churn(20, 2 * MiB); // a read's buffers, kept when a write starts
  out.keptBeforeWrite = kept();
  const write = await budget.reserve(1000);
  await retention.settled();
  out.keptWhenWriting = kept();
  out.decayWriting = je.dirtyDecayOf(0);
  out.backgroundWriting = je.backgroundThreads();
  out.oversizeDecayWriting = je.dirtyDecayOf(je.oversizeArena);
  churn(5, 8 * MiB);
  write.release();
  await purged();
  out.decayAfterWrite = je.dirtyDecayOf(0);
  out.backgroundAfterWrite = je.backgroundThreads();
  out.oversizeDecayAfterWrite = je.dirtyDecayOf(je.oversizeArena);
  out.keptAfterWrite = kept();

  const purges = await registry.getSingleMetric('lgw_allocator_purges_total')!.get();
  out.purges = Object.fromEntries(purges.values.map((v) => [v.labels.reason, v.value]));
  await retention.onModuleDestroy();
  out.decayAfterStop = je.dirtyDecayOf(0);
  out.backgroundAfterStop = je.backgroundThreads();
  out.activeAfterStop = retention.active;
  console.log(JSON.stringify(out));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
