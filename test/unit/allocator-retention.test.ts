import assert from 'node:assert/strict';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { jemallocInstalled, runStartScript } from '../helpers/start-script';

const CHILD = path.join(__dirname, '..', 'helpers', 'allocator-child.js');

/** Runs the child through scripts/start.sh, as `npm start` runs the gateway, and returns what it printed. */
function run(env: Record<string, string>): Record<string, unknown> {
  const r = runStartScript([CHILD], env);
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as Record<string, unknown>;
}

describe('allocator retention (jemalloc keeps read buffers, hands back write memory)', () => {
  test(
    'keeps freed memory between reads, hands it back once quiet, past the cap or when a write starts, and decays as configured while writes hold memory',
    { skip: !jemallocInstalled && 'jemalloc is not installed' },
    () => {
      const out = run({});
      assert.equal(out.active, true, JSON.stringify(out));
      assert.equal(out.decayReading, -1, 'no write in flight: freed pages are kept');
      assert.equal(out.backgroundReading, false, "and jemalloc's background threads are stopped (nothing for them to do)");
      assert.equal(out.oversizeDecayReading, -1, 'in the oversize arena too');
      assert.ok((out.keptAfterReads as number) >= 36, `40 MiB freed by a read are kept: ${out.keptAfterReads}`);
      assert.ok((out.keptAfterBusyTick as number) >= 36, `not handed back while the engine is busy: ${out.keptAfterBusyTick}`);
      assert.ok((out.keptAfterQuiet as number) < 4, `handed back after a quiet second: ${out.keptAfterQuiet}`);
      assert.ok((out.keptBeforeCap as number) > 64, `80 MiB freed: ${out.keptBeforeCap}`);
      assert.ok((out.keptAfterCap as number) < 4, `past ALLOCATOR_RETAIN_BYTES it is handed back though not quiet: ${out.keptAfterCap}`);
      assert.ok((out.keptBeforeWrite as number) >= 36, `a read's 40 MiB kept: ${out.keptBeforeWrite}`);
      assert.ok(
        (out.keptWhenWriting as number) < 4,
        `handed back when a write starts (not left to decay under it): ${out.keptWhenWriting}`,
      );
      assert.equal(out.decayWriting, 100, "a write in flight: jemalloc's configured decay (scripts/start.sh: 100 ms)");
      assert.equal(out.oversizeDecayWriting, 0, 'the oversize arena, as jemalloc sets it: handed back at once');
      assert.equal(out.backgroundWriting, true, 'the background threads decay while writes hold memory (scripts/start.sh starts them)');
      assert.equal(out.decayAfterWrite, -1, 'the last write ended: kept again');
      assert.equal(out.oversizeDecayAfterWrite, -1);
      assert.equal(out.backgroundAfterWrite, false);
      assert.ok((out.keptAfterWrite as number) < 4, `what the writes left is handed back when they end: ${out.keptAfterWrite}`);
      assert.deepEqual(
        out.purges,
        { quiet: 2, cap: 1, 'writes-started': 1, 'writes-ended': 1 },
        'the first quiet purge is the set-up after the oversize block',
      );
      assert.equal(out.decayAfterStop, 100, "stopped (the gateway closing): jemalloc's own decay again");
      assert.equal(out.backgroundAfterStop, true, 'and its background threads');
      assert.equal(out.activeAfterStop, false);
    },
  );

  test(
    'is off without jemalloc, with ALLOCATOR_RETAIN_BYTES=0, and without a WRITE_ACTIVITY provider',
    { skip: !jemallocInstalled && 'jemalloc is not installed' },
    () => {
      assert.deepEqual(run({ LGW_ALLOCATOR: 'glibc' }), { active: false, why: 'jemalloc is not preloaded' });
      assert.deepEqual(run({ RETAIN: '0' }), { active: false, why: 'off' });
      assert.deepEqual(run({ NO_WRITE_ACTIVITY: '1' }), { active: false, why: 'off' }, 'it could not tell reads from writes');
    },
  );
});
