import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../../../platform/config/config';
import { Errors } from '../../../platform/http/errors';
import { assertName, decodePath, displayId, encodePath } from '../../../platform/http/ids';
import { paginate } from '../../../platform/http/pagination';
import { isUuid, PageRequest } from '../../../platform/http/validation/fields';
import { UnitOfWork } from '../../../platform/db/unit-of-work';
import { TableStorage } from '../../../engine/storage/table-storage.service';
import { AuditContext, AuditService } from '../../audit';
import { NamespacesRepository } from '../namespaces/namespaces.repository';
import { MetricsService } from '../../../platform/observability/metrics.service';
import { PendingLocations } from '../../../platform/cluster/pending-locations.service';
import { LeasedWorker } from '../../../platform/cluster/leased-worker';
import { VersionAdoption } from '../versions/version-adoption.service';
import { Access, type TenantContext } from '../../identity';
import { QuotaService, UsageMeter } from '../../metering';
import { DroppedRow, DroppedTablesRepository, PurgeClaim } from './dropped-tables.repository';
import { PROTECTED_PROPERTY } from '../../databases';

/** Whose dropped tables a call sees: a tenant's catalog (prefix), or (the operator) every catalog of the database. */
export interface DroppedScope {
  database: TenantContext['database'];
  /** undefined: every catalog (the operator's view). */
  catalog?: string;
  principal: string;
  requestId?: string;
}

export interface DroppedTableView {
  id: string;
  table: string[];
  catalog?: string;
  location: string;
  properties: Record<string, string>;
  last_version: number | null;
  storage_bytes: number | null;
  dropped_at: string;
  purge_after: string;
  dropped_by: string;
}

/** A page token of the list: [dropped_at ISO, id]. */
const isListKey = (v: unknown): v is [string, string] =>
  Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && !Number.isNaN(Date.parse(v[0])) && isUuid(v[1]);

/** How many dropped tables one sweep statement purges. */
const PURGE_BATCH = 20;

/**
 * Soft-deleted tables (docs/soft-delete.md): list, undrop (to the same name or a new one), purge now, and the
 * purge sweep that every replica runs every DROP_PURGE_INTERVAL_SECONDS. A purge removes the catalog row and records
 * the folder as a pending clean-up in one statement (FOR UPDATE SKIP LOCKED: replicas take different rows), writes
 * its audit record in the same transaction, then deletes the folder; should the replica die first, the reclaimer
 * deletes it once the record's heartbeat is RECLAIM_AFTER_SECONDS old.
 */
@Injectable()
export class DroppedTablesService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly log = new Logger('DroppedTables');
  private readonly purger = new LeasedWorker<{ purged: number }>({
    log: this.log,
    failure: 'purge sweep failed',
    result: () => ({ purged: 0 }),
    tick: (out) => this.sweepOnce(out),
  });

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repo: DroppedTablesRepository,
    private readonly namespacesRepo: NamespacesRepository,
    private readonly storage: TableStorage,
    private readonly uow: UnitOfWork,
    private readonly audit: AuditService,
    private readonly pending: PendingLocations,
    private readonly quotas: QuotaService,
    private readonly adoption: VersionAdoption,
    private readonly meter: UsageMeter,
    private readonly metrics: MetricsService,
  ) {}

  onApplicationBootstrap(): void {
    this.purger.start(this.config.drop.purgeIntervalMs);
  }

  onApplicationShutdown(): Promise<void> {
    return this.purger.stop();
  }

  private view(r: DroppedRow, withCatalog: boolean): DroppedTableView {
    return {
      id: r.id,
      table: [...decodePath(r.namespacePath), r.name],
      ...(withCatalog ? { catalog: r.catalog } : {}),
      location: this.storage.uri(r.location),
      properties: { ...r.properties },
      last_version: r.lastVersion === null ? null : Number(r.lastVersion),
      storage_bytes: r.storageBytes === null ? null : Number(r.storageBytes),
      dropped_at: new Date(r.droppedAt).toISOString(),
      purge_after: new Date(r.purgeAfter).toISOString(),
      dropped_by: r.droppedBy,
    };
  }

  async list(s: DroppedScope, page: PageRequest): Promise<{ dropped_tables: DroppedTableView[]; page_token?: string }> {
    const { rows, ...next } = await paginate(page, this.config, {
      isKey: isListKey,
      fetch: (before, take) => this.repo.list(s.database.id, s.catalog, before, take),
      keyOf: (r: DroppedRow): [string, string] => [new Date(r.droppedAt).toISOString(), r.id],
    });
    return { dropped_tables: rows.map((r) => this.view(r, s.catalog === undefined)), ...next };
  }

  private notFound(id: string) {
    return Errors.tableNotFound(`dropped table '${id}' not found (it was undropped or purged, or is not this database's)`);
  }

  /**
   * Moves a dropped table back under its old identifier, or under `newName` / `newNamespace` when given (409, code 5,
   * when the name is taken: give a new one). Its rows, versions, tags and indices are its folder's, untouched.
   */
  async undrop(
    s: DroppedScope,
    id: string,
    newName?: string,
    newNamespace?: string[],
  ): Promise<{ id: string[]; location: string; properties: Record<string, string>; version: number | null }> {
    if (!isUuid(id)) throw this.notFound(id);
    if (newName !== undefined) assertName(newName, 'new_name');
    newNamespace?.forEach((p) => assertName(p, 'new_namespace component'));
    const restored = await this.uow.run(async () => {
      const row = await this.repo.lock(s.database.id, s.catalog, id);
      if (!row) throw this.notFound(id);
      const ns = newNamespace ?? decodePath(row.namespacePath);
      const name = newName ?? row.name;
      const target = [...ns, name];
      const scope = { databaseId: row.databaseId, catalog: row.catalog };
      if (!(await this.namespacesRepo.lockShared(scope, encodePath(ns)))) {
        throw Errors.namespaceNotFound(`${displayId(ns)} (create it again, or undrop into another namespace with new_namespace)`);
      }
      if (row.cloneSourceId && !(await this.repo.liveTable(row.cloneSourceId))) {
        throw Errors.invalidTableState('this table is a shallow clone whose source table is dropped: undrop the source first');
      }
      const t = this.tenantOf(s, row.catalog);
      await this.quotas.assertTableRoom(t, true);
      const live = await this.repo.restore(row, encodePath(ns), name);
      if (live === 'name-taken') {
        throw Errors.tableAlreadyExists(
          `table '${displayId(target)}' exists: undrop this one under another name (new_name, new_namespace)`,
        );
      }
      this.auditTarget(row.catalog, target);
      await this.audit.recordWithChange({
        databaseId: s.database.id,
        details: { dropped_id: row.id, location: this.storage.uri(row.location), last_version: row.lastVersion, restored_as: target },
      });
      return { row, live, target };
    });
    // Its bytes left the storage figures with its dropped row, and its usage row is new: measured before others.
    this.meter.written(restored.live.id);
    // A database with catalog-managed versions lost the table's version rows at the drop: taken back from storage.
    await this.adoption.afterCommit(restored.row.location);
    return {
      id: restored.target,
      location: this.storage.uri(restored.row.location),
      properties: { ...restored.live.properties },
      version: restored.row.lastVersion,
    };
  }

  /** Purges a dropped table now: its catalog row and its data. 409 while a dropped shallow clone still reads its files. */
  async purge(
    s: DroppedScope,
    id: string,
  ): Promise<{ id: string; table: string[]; location: string; last_version: number | null; removed: boolean }> {
    if (!isUuid(id)) throw this.notFound(id);
    const claim = await this.uow.run(async () => {
      const [c] = await this.repo.claimForPurge(this.pending.owner, { id, databaseId: s.database.id, catalog: s.catalog });
      if (!c) {
        if (await this.repo.lock(s.database.id, s.catalog, id)) {
          throw Errors.invalidTableState("a dropped shallow clone still reads this table's data files: purge the clone first");
        }
        throw this.notFound(id);
      }
      this.auditTarget(c.catalog, [...decodePath(c.namespacePath), c.name]);
      await this.audit.recordWithChange({ databaseId: s.database.id, details: this.purgeDetails(c, 'requested') });
      return c;
    });
    const removed = await this.removeData(claim);
    return {
      id: claim.id,
      table: [...decodePath(claim.namespacePath), claim.name],
      location: this.storage.uri(claim.location),
      last_version: claim.lastVersion,
      removed,
    };
  }

  /** One sweep: purges every dropped table whose retention has ended (a sweep under way is joined). Returns how many. */
  async sweep(): Promise<number> {
    return (await this.purger.runOnce()).purged;
  }

  private async sweepOnce(out: { purged: number }): Promise<void> {
    for (;;) {
      const claims = await this.uow.run(async () => {
        const cs = await this.repo.claimForPurge(this.pending.owner, { limit: PURGE_BATCH });
        for (const c of cs) {
          await this.audit.record({
            databaseId: c.databaseId,
            databaseName: c.databaseName,
            actor: 'purger',
            action: 'table.purge',
            target: [...(c.catalog ? [`${c.catalog}:`] : []), [...decodePath(c.namespacePath), c.name].join('$')].join(''),
            details: this.purgeDetails(c, 'retention'),
          });
        }
        return cs;
      });
      for (const c of claims) {
        await this.removeData(c);
        out.purged += 1;
      }
      if (claims.length < PURGE_BATCH || this.purger.stopped) break;
    }
  }

  private purgeDetails(c: PurgeClaim, reason: 'retention' | 'requested') {
    return {
      reason,
      dropped_id: c.id,
      location: this.storage.uri(c.location),
      last_version: c.lastVersion,
      dropped_at: new Date(c.droppedAt).toISOString(),
      purge_after: new Date(c.purgeAfter).toISOString(),
    };
  }

  /** Deletes a purged table's folder (its pending record then goes); false when left to the reclaimer. */
  private async removeData(c: PurgeClaim): Promise<boolean> {
    const work = this.pending.watch({
      id: c.pendingId,
      databaseId: c.databaseId,
      databaseName: c.databaseName,
      location: c.location,
      kind: 'cleanup',
      requestId: c.requestId,
      owner: this.pending.owner,
    });
    const bytes = await this.storage.usage(c.location).then(
      (u) => u.bytes,
      () => 0,
    );
    const removed = await this.pending.cleanUp(work);
    if (removed) this.metrics.recordReclaim('purged_table', bytes);
    return removed;
  }

  /** The audit record's target: the table's identifier (the route names the dropped id). */
  private auditTarget(catalog: string, id: string[]): void {
    const p = AuditContext.pending();
    if (p) p.entry.target = `${catalog ? `${catalog}:` : ''}${id.join('$')}`;
  }

  /** What the quota check needs of a caller: the database (its quotas) and the catalog. */
  private tenantOf(s: DroppedScope, catalog: string): TenantContext {
    return { database: s.database, catalog, role: 'admin', access: Access.of('admin'), principal: s.principal, requestId: s.requestId };
  }

  // Protection flags of tables and namespaces (the property protected=true).

  async protectTable(t: TenantContext, id: string[], on: boolean): Promise<{ properties: Record<string, string> }> {
    if (id.length === 0) throw Errors.invalidInput('a table identifier needs at least a table name');
    const ns = id.slice(0, -1);
    const properties = await this.uow.run(async () => {
      const scope = { databaseId: t.database.id, catalog: t.catalog };
      // Shared lock on its namespace: a cascade drop that locked the subtree sees this change, or waits for it.
      if (!(await this.namespacesRepo.lockShared(scope, encodePath(ns)))) throw Errors.namespaceNotFound(displayId(ns));
      const props = await this.repo.setTableProtection(scope, encodePath(ns), id[id.length - 1], on);
      if (!props) throw Errors.tableNotFound(displayId(id));
      await this.audit.recordWithChange({ details: { [PROTECTED_PROPERTY]: on } });
      return props;
    });
    return { properties };
  }

  async protectNamespace(t: TenantContext, id: string[], on: boolean): Promise<{ properties: Record<string, string> }> {
    if (id.length === 0) throw Errors.invalidInput('the root namespace cannot be dropped, so it has no protection flag');
    const properties = await this.uow.run(async () => {
      const props = await this.repo.setNamespaceProtection({ databaseId: t.database.id, catalog: t.catalog }, encodePath(id), on);
      if (!props) throw Errors.namespaceNotFound(displayId(id));
      await this.audit.recordWithChange({ details: { [PROTECTED_PROPERTY]: on } });
      return props;
    });
    return { properties };
  }
}
