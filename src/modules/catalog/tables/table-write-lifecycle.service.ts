import { Injectable } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError, ErrorCode, Errors } from '../../../platform/http/errors';
import { encodePath, displayId as display } from '../../../platform/http/ids';
import { PendingLocationsRepository } from '../../../platform/cluster/pending-locations.repository';
import { PendingLocations, PendingWork } from '../../../platform/cluster/pending-locations.service';
import { UnitOfWork } from '../../../platform/db/unit-of-work';
import { TableStorage } from '../../../engine/storage/table-storage.service';
import { scopeOf, TenantContext, TenancyService } from '../../identity';
import type { CarriedClaim } from '../../idempotency';
import { NamespacesService } from '../namespaces/namespaces.service';
import { VersionAdoption } from '../versions/version-adoption.service';
import { TableListRow, TableRow, TablesRepository } from './tables.repository';
import { pendingOriginOf, splitTableId, TablesService } from './tables.service';

/** How long a registration whose outcome the catalog did not tell waits for the catalog to answer again. */
const REGISTRATION_OUTCOME_WAIT_MS = 30_000;

/**
 * A table was written and its registration sent, but the catalog went away before telling whether it committed, and
 * did not come back in time: the request fails (503), and its folder is left for the reclaimer to decide on.
 */
export class RegistrationOutcomeUnknown extends ApiError {
  constructor() {
    super(
      503,
      ErrorCode.ServiceUnavailable,
      'catalog database unavailable while this table was being registered; its outcome is unknown: describe it before retrying',
    );
  }
}

/**
 * The data plane's side of a table it writes itself: a fresh location reserved as pending, an in-place write's
 * pending record, the registration of what was written, and the record that a declared table now has data.
 */
@Injectable()
export class TableWriteLifecycle {
  constructor(
    private readonly tables: TablesService,
    private readonly repo: TablesRepository,
    private readonly namespaces: NamespacesService,
    private readonly storage: TableStorage,
    private readonly uow: UnitOfWork,
    private readonly pending: PendingLocations,
    private readonly pendingRepo: PendingLocationsRepository,
    private readonly tenancy: TenancyService,
    private readonly adoption: VersionAdoption,
  ) {}

  /** A fresh storage location for a table the gateway writes itself (not yet registered). */
  async newLocation(t: TenantContext): Promise<string> {
    return this.storage.newLocation(t.database.name, t.catalog, await this.tenancy.storageProfileOf(t.database));
  }

  /**
   * Before a new table is written at the fresh `location`: the existing row when the name is taken (nothing
   * recorded), else the location recorded as pending (in the same statement as the lookup) with its heartbeat
   * running. 404 when the namespace is missing.
   */
  async reserveNew(t: TenantContext, id: string[], location: string): Promise<{ existing: TableRow | null; work: PendingWork | null }> {
    const { ns, name } = splitTableId(id);
    const v = this.pending.values(pendingOriginOf(t), location, 'write');
    const found = await this.repo.findReservingFresh(scopeOf(t), encodePath(ns), name, v);
    if (found.row) return { existing: found.row, work: null };
    const work = this.pending.watch(v);
    try {
      await this.namespaces.assertExists(t, ns);
    } catch (err) {
      work.done();
      throw err;
    }
    return { existing: null, work };
  }

  /**
   * A table row for an in-place write (overwrite, append, merge), with its folder recorded as pending in the same
   * statement as the lookup; the caller ends the work. 404 as `get`. A keyed write's `claim` is made in that
   * statement too (docs/idempotency.md; with the answer of an earlier keyed write it carries) and settled with its
   * outcome; what follows from it (a held key) is the request's commit gate's to act on.
   */
  async getForWrite(t: TenantContext, id: string[], claim?: CarriedClaim): Promise<{ row: TableRow; work: PendingWork }> {
    const { ns, name } = splitTableId(id);
    const v = this.pending.values(pendingOriginOf(t), '', 'write');
    const carried = claim?.carry();
    let row: TableRow | null;
    try {
      const found = await this.repo.findReservingInPlace(scopeOf(t), encodePath(ns), name, v, carried);
      if (carried) claim!.settle(found.carried ?? { claimed: null, stored: false });
      row = found.row;
    } catch (err) {
      if (carried) claim!.settle(err as Error);
      throw err;
    }
    if (row) return { row, work: this.pending.watch({ ...v, location: row.location }) };
    await this.namespaces.assertExists(t, ns);
    throw Errors.tableNotFound(display(id));
  }

  /** Records an in-place write of a table the caller has already looked up (a round trip of its own). */
  beginInPlace(t: TenantContext, row: TableRow): Promise<PendingWork> {
    return this.pending.begin(pendingOriginOf(t), row.location, 'write');
  }

  /**
   * Registers a table whose first version the gateway has already written at `work.location`; the pending record
   * is handed to the new row in the same transaction. 409 (code 5) when the name was taken meanwhile, 503 when the
   * reclaimer took the location over (this writer's heartbeat had lapsed); the caller then removes what it wrote.
   */
  async registerWritten(
    t: TenantContext,
    id: string[],
    work: PendingWork,
    properties: Record<string, string> = {},
    auditDetails: Record<string, unknown> = {},
    /** A shallow clone's source table: it then cannot leave the catalog while this table refers to it. */
    cloneSourceId?: string,
  ): Promise<TableRow> {
    const { ns, name } = splitTableId(id);
    work.assertHeld();
    let row: TableRow;
    try {
      row = await this.uow.run(async () => {
        const inserted = await this.tables.insert(t, ns, name, work.location, properties, true, auditDetails, cloneSourceId);
        if (!(await this.pendingRepo.deleteOwned(work.id, this.pending.owner))) {
          throw Errors.serviceUnavailable('this write lost its storage location to the reclaimer before it was registered; retry');
        }
        return inserted;
      });
    } catch (err) {
      // A refusal rolled the transaction back; any other failure (the catalog went away) may have come after its commit.
      if (err instanceof ApiError) throw err;
      row = await this.registrationOutcome(t, work, err);
    }
    work.handedOver();
    // A database with catalog-managed versions records the version the gateway wrote (before there was a row).
    await this.adoption.afterCommit(row.location);
    return row;
  }

  /**
   * Whether a registration whose transaction failed without a refusal committed all the same (the connection broke
   * after COMMIT was sent): asks the catalog, as soon as it answers again, for a row at the fresh location (which no
   * other table can have). The row when it committed; `err` again when it did not. Should the catalog stay away for
   * REGISTRATION_OUTCOME_WAIT_MS, the work is left to the reclaimer (which removes the folder only if its pending
   * record, deleted by the registration's own transaction, is still there) and RegistrationOutcomeUnknown is thrown.
   */
  private async registrationOutcome(t: TenantContext, work: PendingWork, err: unknown): Promise<TableRow> {
    const deadline = Date.now() + REGISTRATION_OUTCOME_WAIT_MS;
    let pause = 100;
    for (;;) {
      let row: TableRow | null;
      try {
        row = await this.repo.findByLocation(scopeOf(t), work.location);
      } catch {
        // The catalog is still unreachable.
        if (Date.now() >= deadline) {
          work.abandon();
          throw new RegistrationOutcomeUnknown();
        }
        await sleep(pause);
        pause = Math.min(pause * 2, 2_000);
        continue;
      }
      if (row) return row;
      throw err;
    }
  }

  /** Records that a declared table now has data. */
  async markWritten(row: TableListRow): Promise<void> {
    if (!row.materializedAt) await this.repo.markMaterialized([row.id]);
  }
}
