import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, test } from 'node:test';
import { firstValueFrom, from, Observable, timer } from 'rxjs';
import { map, mergeMap, toArray } from 'rxjs/operators';
import { ScopedStorage } from '../../src/platform/context/scoped-storage';

/** Node 24 keeps async context without hooks: there, switching the storage off leaves old stores where they were. */
const HOOKS = Number(process.versions.node.split('.')[0]) < 24;

describe('ScopedStorage (async context switched on only while a scope is open)', () => {
  test('a scope sees its store through awaits and timers; outside any scope there is none', async () => {
    const s = new ScopedStorage<string>();
    assert.equal(s.getStore(), undefined);
    const seen = await s.run('a', async () => {
      await sleep(2);
      return s.getStore();
    });
    assert.equal(seen, 'a');
    assert.equal(s.getStore(), undefined);
  });

  test('overlapping scopes keep their own stores: the first to end does not switch the other off', async () => {
    const s = new ScopedStorage<number>();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const long = s.run(1, async () => {
      await gate;
      await sleep(2);
      return s.getStore();
    });
    const short = await s.run(2, async () => s.getStore());
    assert.equal(short, 2);
    release();
    assert.equal(await long, 1, 'the long scope still sees its store after the short one ended');
  });

  test('a scope that fails releases its count: the next scopes and the switch-off still work', async () => {
    const s = new ScopedStorage<string>();
    await assert.rejects(
      s.run('x', async () => {
        throw new Error('boom');
      }),
      /boom/,
    );
    let leftover!: Promise<string | undefined>;
    await s.run('y', async () => {
      leftover = sleep(10).then(() => s.getStore());
    });
    // Work left running after the last scope ended: switched off, it reads no store (Node 20 and 22).
    if (HOOKS) assert.equal(await leftover, undefined);
    else await leftover;
    assert.equal(await s.run('z', async () => s.getStore()), 'z');
  });

  test('observe: the store reaches the whole Observable, and the scope ends with it', async () => {
    const s = new ScopedStorage<string>();
    const out = await firstValueFrom(
      s
        .observe('o', () =>
          from([1, 2]).pipe(
            mergeMap((n) => timer(2).pipe(map(() => `${n}:${s.getStore()}`))),
            toArray(),
          ),
        )
        .pipe(toArray()),
    );
    assert.deepEqual(out, [['1:o', '2:o']]);
    const failing = s.observe(
      'f',
      () =>
        new Observable<number>(() => {
          throw new Error('subscribe failed');
        }),
    );
    await assert.rejects(firstValueFrom(failing), /subscribe failed/);
    assert.equal(await s.run('after', async () => s.getStore()), 'after');
  });
});
