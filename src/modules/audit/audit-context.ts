import { Observable } from 'rxjs';
import { ScopedStorage } from '../../platform/context/scoped-storage';

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

/** On only while an audited change is under way, so that reads run without async hooks (scoped-storage.ts). */
const current = new ScopedStorage<PendingAudit>();

export const AuditContext = {
  /** Runs `fn` (and everything it awaits) with `pending` as the audit record owed. */
  run<T>(pending: PendingAudit, fn: () => Promise<T>): Promise<T> {
    return current.run(pending, fn);
  },
  /** `source` (subscribed to in the context, and everything it does) with `pending` as the audit record owed. */
  observe<T>(pending: PendingAudit, source: () => Observable<T>): Observable<T> {
    return current.observe(pending, source);
  },
  /** The record the current request owes, if it is an audited one and has not recorded it yet. */
  pending(): PendingAudit | undefined {
    const p = current.getStore();
    return p?.state === 'pending' ? p : undefined;
  },
};

export const pendingAudit = (entry: AuditEntry): PendingAudit => ({ entry, state: 'pending' });
