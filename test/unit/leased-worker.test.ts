import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Logger } from '@nestjs/common';
import { heartbeat, LeasedWorker } from '../../src/platform/cluster/leased-worker';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const logger = () => {
  const warnings: string[] = [];
  return { warnings, log: { warn: (m: string) => void warnings.push(m) } as unknown as Logger };
};

describe('the leased worker', () => {
  test('joins a tick under way, keeps what a failing tick filled in, logs the failure and runs the next', async () => {
    const { warnings, log } = logger();
    let calls = 0;
    const w = new LeasedWorker<{ n: number }>({
      log,
      failure: 'round failed',
      result: () => ({ n: 0 }),
      tick: async (out) => {
        calls++;
        await sleep(20);
        out.n = calls;
        if (calls === 1) throw new Error('boom');
      },
    });
    const [a, b] = await Promise.all([w.runOnce(), w.runOnce()]);
    assert.equal(calls, 1);
    assert.equal(a, b);
    assert.deepEqual(a, { n: 1 });
    assert.deepEqual(warnings, ['round failed: boom']);
    assert.deepEqual(await w.runOnce(), { n: 2 });
    await w.stop();
    assert.equal(w.stopped, true);
    assert.deepEqual(await w.runOnce(), { n: 0 }, 'after stop: no tick, an empty result');
    assert.equal(calls, 2);
  });

  test("'rerun' runs once more after the tick under way, however many calls came meanwhile", async () => {
    const { log } = logger();
    let calls = 0;
    const w = new LeasedWorker<void>({
      log,
      failure: 'x',
      result: () => undefined,
      tick: async () => void (calls++, await sleep(20)),
      overlap: 'rerun',
    });
    await Promise.all([w.runOnce(), w.runOnce(), w.runOnce()]);
    await sleep(60);
    assert.equal(calls, 2);
    await w.stop();
  });

  test('ticks on its interval (and at once when asked), not when off, and stop() waits for the tick under way', async () => {
    const { log } = logger();
    let calls = 0;
    let inTick = false;
    const off = new LeasedWorker<void>({ log, failure: 'x', result: () => undefined, tick: async () => void calls++ });
    off.start(0, true);
    await sleep(30);
    assert.equal(calls, 0, 'an interval of 0 is off');
    const w = new LeasedWorker<void>({
      log,
      failure: 'x',
      result: () => undefined,
      tick: async () => {
        calls++;
        inTick = true;
        await sleep(15);
        inTick = false;
      },
    });
    w.start(25, true);
    await sleep(5);
    assert.equal(calls, 1, 'the first tick at once');
    await sleep(70);
    assert.ok(calls >= 2, `ticks on the interval (${calls})`);
    await w.stop();
    assert.equal(inTick, false);
    const after = calls;
    await sleep(60);
    assert.equal(calls, after, 'no tick after stop()');
  });

  test('the heartbeat renews until stopped, and survives a failing renewal', async () => {
    let beats = 0;
    const lease = heartbeat(async () => {
      beats++;
      if (beats === 1) throw new Error('lost connection');
    }, 10);
    await sleep(55);
    lease.stop();
    const seen = beats;
    assert.ok(seen >= 3, `renewed (${seen})`);
    await sleep(30);
    assert.equal(beats, seen);
  });
});
