import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config/config';
import { Errors } from '../http/errors';
import { LOCATION_REMOVER, LocationRemover } from './location-remover';
import { PendingKind, PendingLocationsRepository, PendingValues } from './pending-locations.repository';
import { ReplicaIdentity } from './replica-identity';

/** Moved to replica-identity.ts; re-exported for the importers not yet updated. */
export { ReplicaIdentity };

/** Whose storage work a record is: the database and, for a request, its id. */
export interface PendingOrigin {
  databaseId: string;
  databaseName: string;
  requestId?: string | null;
}

/**
 * One recorded piece of storage work in progress. While it runs, its heartbeat is renewed every
 * `reclaim.heartbeatMs`; it ends in exactly one way:
 *  - `done()`: the work finished (or wrote nothing): the record is deleted;
 *  - `handedOver()`: the record was deleted in the transaction that registered the data (the table row owns it);
 *  - `abandon()`: the work failed and may have left data behind: the record stays, and the reclaimer finishes it
 *    once RECLAIM_AFTER_SECONDS have passed.
 */
export class PendingWork {
  private timer?: NodeJS.Timeout;
  private ended = false;
  private lost = false;

  constructor(
    readonly values: PendingValues,
    private readonly service: PendingLocations,
  ) {}

  get id(): string {
    return this.values.id;
  }

  get location(): string {
    return this.values.location;
  }

  /** Starts the heartbeat (the record exists). */
  start(intervalMs: number): this {
    this.timer = setInterval(() => void this.beat(), intervalMs);
    this.timer.unref();
    return this;
  }

  /** Throws (503) when the record was taken over: the reclaimer has judged this writer gone and owns the location. */
  assertHeld(): void {
    if (this.lost) {
      throw Errors.serviceUnavailable(
        'this write lost its storage location: its heartbeat could not be renewed for RECLAIM_AFTER_SECONDS; retry',
      );
    }
  }

  /** Resolves once the record is deleted (or its deletion failed, leaving it to the reclaimer); callers may not wait. */
  done(): Promise<void> {
    if (!this.end()) return Promise.resolve();
    return this.service.forget(this);
  }

  handedOver(): void {
    this.end();
  }

  abandon(): void {
    this.end();
  }

  private end(): boolean {
    if (this.ended) return false;
    this.ended = true;
    if (this.timer) clearInterval(this.timer);
    return true;
  }

  private async beat(): Promise<void> {
    if (this.ended) return;
    const held = await this.service.renew(this);
    if (held === false && !this.ended) {
      this.lost = true;
      this.end();
    }
  }
}

/** The writer's side of pending locations: record storage work before it starts, keep it alive, end it. */
@Injectable()
export class PendingLocations implements OnApplicationShutdown {
  private readonly log = new Logger('PendingLocations');
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly heartbeatMs: number;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly repo: PendingLocationsRepository,
    @Inject(LOCATION_REMOVER) private readonly remover: LocationRemover,
    private readonly replica: ReplicaIdentity,
  ) {
    this.heartbeatMs = config.reclaim.heartbeatMs;
  }

  get owner(): string {
    return this.replica.id;
  }

  /** The values of a new record (not yet stored): for callers that insert it within a statement of their own. */
  values(origin: PendingOrigin, location: string, kind: PendingKind): PendingValues {
    return {
      id: randomUUID(),
      databaseId: origin.databaseId,
      databaseName: origin.databaseName,
      location,
      kind,
      requestId: origin.requestId ?? null,
      owner: this.replica.id,
    };
  }

  /** Records storage work in a round trip of its own and starts its heartbeat. */
  async begin(origin: PendingOrigin, location: string, kind: PendingKind): Promise<PendingWork> {
    const v = this.values(origin, location, kind);
    await this.repo.insert(v);
    return this.watch(v);
  }

  /** Starts the heartbeat of a record the caller has just stored. */
  watch(v: PendingValues): PendingWork {
    return new PendingWork(v, this).start(this.heartbeatMs);
  }

  /**
   * Runs a recorded clean-up: deletes the location, then the record. When the deletion fails the record stays for
   * the reclaimer. Resolves false then (the failure is logged, not thrown: the catalog change it follows is done).
   */
  async cleanUp(work: PendingWork): Promise<boolean> {
    return this.track(
      this.remover.remove(work.location).then(
        // The record goes before the answer: a name re-created right after must not find it still pending.
        async () => {
          await work.done();
          return true;
        },
        (err: unknown) => {
          this.log.warn(`could not delete ${work.location}; the reclaimer will: ${(err as Error).message}`);
          work.abandon();
          return false;
        },
      ),
    );
  }

  /** @internal PendingWork's heartbeat: true held, false taken over, undefined unknown (catalog unreachable). */
  async renew(work: PendingWork): Promise<boolean | undefined> {
    try {
      return await this.repo.heartbeat(work.id, this.replica.id);
    } catch (err) {
      this.log.warn(`could not renew the heartbeat of ${work.location}: ${(err as Error).message}`);
      return undefined;
    }
  }

  /** @internal Deletes a finished record; a failure only leaves it for the reclaimer, which finds nothing to do. */
  forget(work: PendingWork): Promise<void> {
    return this.track(
      this.repo.deleteOwned(work.id, this.replica.id).then(
        () => undefined,
        (err: unknown) => {
          this.log.warn(`could not delete the pending record of ${work.location}: ${(err as Error).message}`);
        },
      ),
    );
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
  }

  private track<T>(p: Promise<T>): Promise<T> {
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p)).catch(() => undefined);
    return p;
  }
}
