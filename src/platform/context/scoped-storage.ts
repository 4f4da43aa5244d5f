import { AsyncLocalStorage } from 'node:async_hooks';
import { Observable } from 'rxjs';
import { finalize } from 'rxjs/operators';

/**
 * An AsyncLocalStorage that is switched on only while one of its scopes is open (docs/adr/0010-async-context.md).
 *
 * On Node 20 and 22 AsyncLocalStorage runs on async hooks: while any instance is enabled, every promise the process
 * creates pays a hook, whether or not it belongs to a scope; an instance is enabled by its first `run` and stays so
 * until `disable()`. The gateway's contexts (the unit of work, the audit record owed, a maintenance run) are open
 * only around writes and background work, so each is switched off when its last scope ends and the catalog reads run
 * without the hooks. On Node 24 the context is kept without hooks and the switch costs nothing and saves nothing.
 *
 * Work a scope leaves running after it ended (a timer, a fire-and-forget promise) must not rely on the store: once
 * the storage is switched off it reads undefined there on Node 20 and 22, the old store on Node 24.
 */
export class ScopedStorage<T> {
  private readonly storage = new AsyncLocalStorage<T>();
  private open = 0;

  constructor() {
    this.storage.disable();
  }

  /** The store of the scope this call runs in, if any. */
  getStore(): T | undefined {
    return this.storage.getStore();
  }

  /** Runs `fn` (and everything it awaits) in a scope with `store`, until the promise it returns settles. */
  async run<R>(store: T, fn: () => Promise<R>): Promise<R> {
    this.open++;
    try {
      return await this.storage.run(store, fn);
    } finally {
      this.release();
    }
  }

  /** `source`, subscribed to in a scope with `store` that lasts until it completes, fails or is unsubscribed. */
  observe<R>(store: T, source: () => Observable<R>): Observable<R> {
    return new Observable<R>((subscriber) => {
      this.open++;
      let ended = false;
      const end = () => {
        if (ended) return;
        ended = true;
        this.release();
      };
      try {
        return this.storage.run(store, () => source().pipe(finalize(end)).subscribe(subscriber));
      } catch (err) {
        end();
        throw err;
      }
    });
  }

  private release(): void {
    if (--this.open === 0) this.storage.disable();
  }
}
