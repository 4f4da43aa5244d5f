import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import {
  EXPIRED_GARBAGE_BYTES,
  FULL_COLLECTION_GROWTH_BYTES,
  FULL_COLLECTION_QUIET_TICKS,
  QUIET_TICKS,
  QUIET_UTILIZATION,
  YoungGenerationProbes,
  YoungGenerationRelease,
} from '../../src/platform/runtime/young-generation-release';

/** Probes the test drives: the loop's utilisation of each tick, and the collections asked for. */
function fakeProbes(utilization: number[]): YoungGenerationProbes & { collections: string[]; used: number; held: number } {
  const collections: string[] = [];
  let next = 0;
  return {
    collections,
    used: 100 * MiB,
    held: 110 * MiB,
    loopUtilization: () => utilization[next++] ?? 0,
    collect: (type) => collections.push(type),
    heapUsed() {
      return this.used;
    },
    heapHeld() {
      return this.held;
    },
  };
}

const MiB = 1024 * 1024;

/** A busy tick, then QUIET_TICKS quiet ones (each followed by its collection's own time), then one more quiet one. */
const SPELL = [
  /* busy */ 0.5,
  ...Array<number>(QUIET_TICKS)
    .fill(0.004)
    .flatMap((u) => [u, 0.9]),
  0.004,
];

/** `n` ticks of the release and what each collected. */
const ticks = (r: YoungGenerationRelease, n: number) => Array.from({ length: n }, () => r.tick());
/** The ticks of a spell (SPELL) whose full collection comes sooner: on the QUIET_TICKS-th quiet tick. */
const SOONER = [undefined, ...Array<string>(QUIET_TICKS - 1).fill('minor'), 'major', undefined];
/** The ticks of a spell whose full collection waits (scavenges only). */
const WAITS = [undefined, ...Array<string>(QUIET_TICKS).fill('minor'), undefined];

function release(): { r: YoungGenerationRelease; registry: Registry } {
  const registry = new Registry();
  return { r: new YoungGenerationRelease({ httpAdapter: {} } as never, { registry } as never), registry };
}

describe('heap release when the process goes quiet', () => {
  test('after a burst: a scavenge on each of the first quiet ticks, a full collection much later; nothing more until the loop is busy again', async () => {
    assert.ok(FULL_COLLECTION_QUIET_TICKS > QUIET_TICKS);
    const { r, registry } = release();
    // start() reads the first interval; then one value per look: two at each tick that collects (the second is the
    // collection's own time, which must not count).
    const util = [0, /* busy */ 0.5];
    // An idle process's own timers keep its loop a little busy, now and then more than 1%: still quiet.
    for (let i = 1; i <= FULL_COLLECTION_QUIET_TICKS; i++) {
      util.push(i % 3 === 1 ? 0.014 : 0.004);
      if (i <= QUIET_TICKS || i === FULL_COLLECTION_QUIET_TICKS) util.push(0.9);
    }
    util.push(0.001, 0.001, /* busy again */ 0.2, 0.001, 0);
    const probes = fakeProbes(util);
    r.start(probes, false);
    assert.equal(r.tick(), undefined, 'busy: nothing');
    const made: (string | undefined)[] = [];
    for (let i = 0; i < FULL_COLLECTION_QUIET_TICKS; i++) made.push(r.tick());
    const expected = [
      ...Array<string>(QUIET_TICKS).fill('minor'),
      ...Array<undefined>(FULL_COLLECTION_QUIET_TICKS - QUIET_TICKS - 1).fill(undefined),
      'major',
    ];
    assert.deepEqual(made, expected, "the collections' own time (0.9) is not activity");
    assert.equal(r.tick(), undefined, 'released already in this quiet spell');
    assert.equal(r.tick(), undefined);
    assert.equal(r.tick(), undefined, 'busy again');
    assert.equal(r.tick(), 'minor', 'a new quiet spell starts a new release');
    assert.deepEqual(probes.collections, [...Array<string>(QUIET_TICKS).fill('minor'), 'major', 'minor']);
    assert.match(await registry.metrics(), /^lgw_heap_releases_total 1$/m);
  });

  test('a pause shorter than the full-collection wait keeps the optimized code: scavenges only', () => {
    const { r } = release();
    const pause = [/* busy */ 0.5, ...Array<number>(FULL_COLLECTION_QUIET_TICKS - 1).fill(0.004)].flatMap((u, i) =>
      i >= 1 && i <= QUIET_TICKS ? [u, 0.9] : [u],
    );
    const probes = fakeProbes([0, ...pause, ...pause]);
    r.start(probes, false);
    for (let i = 0; i < 2 * FULL_COLLECTION_QUIET_TICKS; i++) r.tick();
    assert.deepEqual(probes.collections, Array<string>(2 * QUIET_TICKS).fill('minor'));
  });

  test("after writes, sooner: the full collection on the last scavenge's tick (an upload's dead chunks)", () => {
    const { r } = release();
    const probes = fakeProbes([0, ...SPELL, ...SPELL]);
    r.start(probes, false);
    r.onWriting(true);
    r.onWriting(false);
    const made = Array.from({ length: QUIET_TICKS + 2 }, () => r.tick());
    assert.deepEqual(made, [undefined, ...Array<string>(QUIET_TICKS - 1).fill('minor'), 'major', undefined]);
    // No writes in the next burst: back to waiting.
    const next = Array.from({ length: QUIET_TICKS + 2 }, () => r.tick());
    assert.deepEqual(next, [undefined, ...Array<string>(QUIET_TICKS).fill('minor'), undefined]);
  });

  test('a burst that grew the heap by FULL_COLLECTION_GROWTH_BYTES is collected sooner too (a fleet of tenants touched once)', () => {
    const { r } = release();
    const probes = fakeProbes([0, ...SPELL, ...SPELL]);
    r.start(probes, false);
    probes.used += FULL_COLLECTION_GROWTH_BYTES + MiB;
    assert.deepEqual(ticks(r, QUIET_TICKS + 2), SOONER);
    // Growth is counted from the heap after that collection: a burst that adds less waits again.
    probes.used += FULL_COLLECTION_GROWTH_BYTES / 2;
    assert.deepEqual(ticks(r, QUIET_TICKS + 2), WAITS);
  });

  test("a burst that left the heap held grown is collected sooner, though one of V8's own collections brought the heap in use down", () => {
    const { r } = release();
    const probes = fakeProbes([0, ...SPELL, ...SPELL]);
    r.start(probes, false);
    // The pass over a fleet: V8 collected the old generation itself (in use back to +16 MiB) and kept its pages.
    probes.used += 16 * MiB;
    probes.held += FULL_COLLECTION_GROWTH_BYTES + 16 * MiB;
    assert.deepEqual(ticks(r, QUIET_TICKS + 2), SOONER);
    // V8 gives the pages back at its next collection: held is counted from the least it was since ours.
    probes.held -= FULL_COLLECTION_GROWTH_BYTES + 8 * MiB;
    assert.deepEqual(ticks(r, QUIET_TICKS + 2), WAITS);
  });

  test("a read burst's new space, grown and shrunk again by the scavenges, does not bring the full collection forward", () => {
    const { r } = release();
    const probes = fakeProbes([0, ...SPELL]);
    r.start(probes, false);
    probes.held += 60 * MiB; // two 32-MiB semi-spaces under load
    const made: Array<string | undefined> = [];
    for (let i = 0; i < QUIET_TICKS + 2; i++) {
      made.push(r.tick());
      if (i === 3) probes.held -= 60 * MiB; // shrunk at a scavenge of a quiet tick
    }
    assert.deepEqual(made, WAITS);
  });

  test('cache entries let go in a quiet spell released already start another release (expired lookups of a fleet)', () => {
    const { r } = release();
    const probes = fakeProbes([0, ...SPELL, ...SPELL]);
    r.start(probes, false);
    probes.used += FULL_COLLECTION_GROWTH_BYTES + MiB;
    assert.deepEqual(ticks(r, QUIET_TICKS + 2), SOONER);
    // Still quiet: a little let go waits; EXPIRED_GARBAGE_BYTES in all releases again, its full collection sooner.
    r.onExpired(EXPIRED_GARBAGE_BYTES / 2);
    assert.equal(r.tick(), undefined);
    r.onExpired(EXPIRED_GARBAGE_BYTES / 2);
    assert.deepEqual(ticks(r, QUIET_TICKS + 1), SOONER.slice(1));
    assert.deepEqual(
      probes.collections.filter((c) => c === 'major'),
      ['major', 'major'],
    );
  });

  test('a steady load of 5% or more of the loop never collects', () => {
    assert.equal(QUIET_UTILIZATION, 0.05);
    const { r } = release();
    const probes = fakeProbes([0, ...Array<number>(30).fill(0.05)]);
    r.start(probes, false);
    for (let i = 0; i < 30; i++) assert.equal(r.tick(), undefined);
    assert.deepEqual(probes.collections, []);
  });

  test("in a real process: V8's new space, grown under load, and the dead buffers of a burst are given back once quiet", () => {
    // A child with the start script's V8 flags, so the new space grows as it does in the gateway; it allocates for a
    // second (objects, and 48 MiB of buffers that live through it, so in the old generation, then die), then idles
    // with the release on its own timer and reports what it sees right after the full collection.
    const module = path.join(__dirname, '..', '..', 'src', 'platform', 'runtime', 'young-generation-release.js');
    const child = `
      const v8 = require('node:v8');
      const { YoungGenerationRelease, processProbes } = require(${JSON.stringify(module)});
      const newSpace = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size >> 20;
      const buffers = () => process.memoryUsage().arrayBuffers >> 20;
      let keep = [];
      const held = [];
      const t0 = Date.now();
      while (Date.now() - t0 < 1000) {
        for (let i = 0; i < 1000; i++) keep.push({ a: i, b: 'x' + i });
        if (keep.length > 50000) keep = [];
        if (held.length < 48) held.push(new ArrayBuffer(1 << 20));
      }
      keep = null;
      held.length = 0;
      const before = { newSpace: newSpace(), buffers: buffers() };
      const r = new YoungGenerationRelease({ httpAdapter: {} }, { registry: new (require('prom-client').Registry)() });
      const probes = processProbes();
      if (typeof probes === 'string') throw new Error(probes);
      const report = () => console.log(JSON.stringify({ before, after: { newSpace: newSpace(), buffers: buffers() } }));
      const collect = probes.collect;
      probes.collect = (type) => {
        collect(type);
        if (type === 'major') setTimeout(() => { clearTimeout(fallback); clearInterval(timers); report(); r.onModuleDestroy(); }, 200);
      };
      // A quiet server's timers still allocate a little.
      const timers = setInterval(() => { globalThis.sink = Array.from({ length: 200 }, (_, i) => ({ i })); }, 100);
      r.onWriting(true); // the burst is an upload
      r.start(probes);
      const fallback = setTimeout(report, 60000); // no release: what there is then (also keeps the child alive)
    `;
    const out = spawnSync(process.execPath, ['--max-semi-space-size=32', '--expose-gc', '-e', child], {
      encoding: 'utf8',
      timeout: 90_000,
    });
    assert.equal(out.status, 0, out.stderr);
    const { before, after } = JSON.parse(out.stdout.trim()) as Record<'before' | 'after', { newSpace: number; buffers: number }>;
    assert.ok(before.newSpace >= 16, `the new space grew under load: ${before.newSpace} MiB`);
    assert.ok(after.newSpace <= 2, `given back once quiet: ${after.newSpace} MiB`);
    assert.ok(before.buffers >= 40, `the burst's buffers, dead but not collected: ${before.buffers} MiB`);
    assert.ok(after.buffers <= 8, `freed once quiet: ${after.buffers} MiB`);
  });

  test('off unless node was started with --expose-gc (no V8 flag is set at run time)', () => {
    const module = path.join(__dirname, '..', '..', 'src', 'platform', 'runtime', 'young-generation-release.js');
    const child = `
      const v8 = require('node:v8');
      const { processProbes } = require(${JSON.stringify(module)});
      v8.setFlagsFromString = (f) => { throw new Error('setFlagsFromString(' + f + ')'); };
      const p = processProbes();
      console.log(JSON.stringify({ probes: typeof p === 'string' ? p : 'on', gc: typeof globalThis.gc }));
    `;
    const run = (flags: string[]) => {
      const out = spawnSync(process.execPath, [...flags, '-e', child], { encoding: 'utf8', timeout: 30_000 });
      assert.equal(out.status, 0, out.stderr);
      return JSON.parse(out.stdout.trim()) as { probes: string; gc: string };
    };
    assert.deepEqual(run([]), { probes: 'node was started without --expose-gc (scripts/start.sh passes it)', gc: 'undefined' });
    assert.deepEqual(run(['--expose-gc']), { probes: 'on', gc: 'function' });
  });
});
