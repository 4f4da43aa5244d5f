import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Keeps an AsyncLocalStorage switched on only while some scope of it is open.
 *
 * Node 20 runs AsyncLocalStorage on async hooks: while any instance is enabled, every promise the process creates
 * pays an init hook, whether or not it belongs to a scope (a chain of 20 awaits: 2.7 µs without, 8.7 µs with; the
 * catalog reads create dozens of promises each). An instance is enabled by its first `run` and stays so until
 * `disable()`. The gateway's two contexts (the unit of work's, through nestjs-cls, and the audit record's) are open
 * only around writes, so each is switched off when its last open scope ends; `AsyncLocalStorage.run` switches it on
 * again for the next one. Requests that open neither (the catalog reads) then run without the hooks.
 *
 * Switched off, `getStore()` answers undefined everywhere, also in work a scope left running after it ended (a
 * timer, a fire-and-forget promise): such work sees what code outside any scope sees, not a scope that is over.
 * Every `run` of the storage must therefore be counted here (`around` or `hold`), or it may be switched off under
 * it. There is one switch per storage in the process (`ContextSwitch.for`), shared by every gateway in it: the tests
 * start several, and nestjs-cls keeps one storage per process. (On Node 24 the context is kept without hooks, and
 * this is merely unneeded.)
 */
export class ContextSwitch {
  private open = 0;

  /** `storage` undefined: nothing to switch (the switch only counts). */
  private constructor(private readonly storage: AsyncLocalStorage<unknown> | undefined) {
    storage?.disable();
  }

  /** The switch of `storage` (made, and the storage switched off, on first use: nothing is open yet). */
  static for(storage: AsyncLocalStorage<unknown> | undefined): ContextSwitch {
    if (!storage) return new ContextSwitch(undefined);
    let s = switches.get(storage);
    if (!s) switches.set(storage, (s = new ContextSwitch(storage)));
    return s;
  }

  /** Runs `work` (which enters the context) as an open scope, until the promise it returns settles. */
  async around<R>(work: () => Promise<R>): Promise<R> {
    this.open++;
    try {
      return await work();
    } finally {
      this.release();
    }
  }

  /** Opens a scope for work that does not end with a promise (an Observable); the returned function ends it, once. */
  hold(): () => void {
    this.open++;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.release();
    };
  }

  /** Scopes open now. */
  get scopes(): number {
    return this.open;
  }

  private release(): void {
    if (--this.open === 0) this.storage?.disable();
  }
}

const switches = new WeakMap<AsyncLocalStorage<unknown>, ContextSwitch>();
