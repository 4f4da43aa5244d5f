import { AsyncLocalStorage } from 'node:async_hooks';
import { finalize, Observable } from 'rxjs';
import { ContextSwitch } from '../../platform/runtime/async-context';

/** One audit record: who did what to which object, in which database, by which request. */
export interface AuditEntry {
  databaseId?: string | null;
  databaseName: string;
  actor: string;
  action: string;
  target: string;
  details?: Record<string, unknown>;
  requestId?: string;
}

/**
 * The audit record a request owes, from the moment an @Audited route starts until the change it describes is
 * recorded. The route declares what is audited (AuditInterceptor fills in who and what); the service that makes
 * the change decides when: inside the catalog transaction that makes it, or just before the engine commits a data
 * change. `state` says what became of it, so the interceptor can tell a recorded change from an unrecorded one.
 */
export interface PendingAudit {
  entry: AuditEntry;
  state: 'pending' | 'written' | 'nothing-changed';
}

const current = new AsyncLocalStorage<PendingAudit>();
/** On only while an audited change is under way (src/platform/runtime/async-context.ts): reads run without async hooks. */
const scopes = ContextSwitch.for(current as AsyncLocalStorage<unknown>);

export const AuditContext = {
  /** Runs `fn` (and everything it awaits) with `pending` as the audit record owed. */
  run<T>(pending: PendingAudit, fn: () => Promise<T>): Promise<T> {
    return scopes.around(() => current.run(pending, fn));
  },
  /** `source` (subscribed to in the context, and everything it does) with `pending` as the audit record owed. */
  observe<T>(pending: PendingAudit, source: () => Observable<T>): Observable<T> {
    return new Observable<T>((subscriber) => {
      const end = scopes.hold();
      try {
        return current.run(pending, () => source().pipe(finalize(end)).subscribe(subscriber));
      } catch (err) {
        end();
        throw err;
      }
    });
  },
  /** The record the current request owes, if it is an audited one and has not recorded it yet. */
  pending(): PendingAudit | undefined {
    const p = current.getStore();
    return p?.state === 'pending' ? p : undefined;
  },
};

export const pendingAudit = (entry: AuditEntry): PendingAudit => ({ entry, state: 'pending' });
