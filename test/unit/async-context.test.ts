import assert from 'node:assert/strict';
import { AsyncLocalStorage } from 'node:async_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import { ContextSwitch } from '../../src/platform/runtime/async-context';

/**
 * ContextSwitch (src/platform/runtime/async-context.ts): an AsyncLocalStorage on only while a scope of it is open, so that
 * requests outside every scope run without Node 20's async hooks, and the stores of scopes still hold across awaits.
 */

/** Resolves, `ms` after it is called, with the store seen then (a timer started inside a scope outlives it). */
const storeLater = (storage: AsyncLocalStorage<string>, ms: number) =>
  new Promise<string | undefined>((resolve) => setTimeout(() => resolve(storage.getStore()), ms));

test('a scope keeps its store across awaits; work it left running sees no store once it is over', async () => {
  const storage = new AsyncLocalStorage<string>();
  const scopes = ContextSwitch.for(storage as AsyncLocalStorage<unknown>);
  let later: Promise<string | undefined> | undefined;
  const seen = await scopes.around(() =>
    storage.run('a', async () => {
      await sleep(5);
      later = storeLater(storage, 30);
      await sleep(5);
      return storage.getStore();
    }),
  );
  assert.equal(seen, 'a');
  assert.equal(scopes.scopes, 0);
  // A plain AsyncLocalStorage would still answer 'a' here: the timer was created inside the scope.
  assert.equal(await later, undefined);
});

test('overlapping scopes: the first ending does not switch off the one still open', async () => {
  const storage = new AsyncLocalStorage<string>();
  const scopes = ContextSwitch.for(storage as AsyncLocalStorage<unknown>);
  let releaseB!: () => void;
  const bMayEnd = new Promise<void>((r) => (releaseB = r));
  const b = scopes.around(() =>
    storage.run('b', async () => {
      await bMayEnd; // waits while 'a' begins and ends
      await sleep(5);
      return storage.getStore();
    }),
  );
  const a = await scopes.around(() => storage.run('a', async () => (await sleep(5), storage.getStore())));
  assert.equal(a, 'a');
  assert.equal(scopes.scopes, 1);
  releaseB();
  assert.equal(await b, 'b');
  assert.equal(scopes.scopes, 0);
});

test('a failing scope is closed too; hold() ends once however often it is called', async () => {
  const storage = new AsyncLocalStorage<string>();
  const scopes = ContextSwitch.for(storage as AsyncLocalStorage<unknown>);
  await assert.rejects(scopes.around(() => storage.run('x', async () => { throw new Error('boom'); })), /boom/);
  assert.equal(scopes.scopes, 0);
  const outer = scopes.hold();
  const inner = scopes.hold();
  inner();
  inner();
  assert.equal(scopes.scopes, 1);
  outer();
  assert.equal(scopes.scopes, 0);
});

test('one switch per storage: a second ContextSwitch.for does not switch off scopes the first has open', async () => {
  const storage = new AsyncLocalStorage<string>();
  const first = ContextSwitch.for(storage as AsyncLocalStorage<unknown>);
  const end = first.hold();
  const seen = storage.run('kept', async () => {
    assert.equal(ContextSwitch.for(storage as AsyncLocalStorage<unknown>), first);
    await sleep(5);
    return storage.getStore();
  });
  assert.equal(await seen, 'kept');
  end();
});
