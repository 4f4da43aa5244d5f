import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../../../platform/config/config';
import { ApiError, Errors } from '../../../platform/http/errors';
import { assertName, decodePath, encodePath, displayId as display, parseObjectId, PATH_SEP } from '../../../platform/http/ids';
import { isString, isStringPair, paginate } from '../../../platform/http/pagination';
import type {
  DeclareTableResponse,
  DeregisterTableResponse,
  DescribeTableResponse,
  DropTableResponse,
  GetTableStatsResponse,
  ListTablesResponse,
  RegisterTableResponse,
  RenameTableResponse,
} from './tables.schemas';
import type { PageRequest } from '../../../platform/http/validation/fields';
import { AuditService } from '../../audit';
import { JobsService } from '../../jobs';
import { NamespacesRepository } from '../namespaces/namespaces.repository';
import { NamespacesService } from '../namespaces/namespaces.service';
import { PendingLocationsRepository } from '../../../platform/cluster/pending-locations.repository';
import { PendingLocations, PendingOrigin } from '../../../platform/cluster/pending-locations.service';
import { requireOn, scopeOf, TenantContext, TenancyService } from '../../identity';
import { CredentialVendor } from '../../vending';
import { ListedTable, TableListRow, TableRow, TablesRepository } from './tables.repository';
import { VersionAdoption } from '../versions/version-adoption.service';
import { TableStorage } from '../../../engine/storage/table-storage.service';
import { UnitOfWork } from '../../../platform/db/unit-of-work';
import { branchOf, LanceEngine } from '../../../engine/lance/lance-engine';
import type { SchemaDialect } from '../../../engine/arrow/arrow-json-schema';
import { QuotaService, UsageMeter } from '../../metering';
import { DropPolicy } from '../../databases';
import { DroppedTablesRepository } from '../dropped/dropped-tables.repository';
import { TableWriteSignals } from './table-write-signals';

/** Who a pending record is for (also the write lifecycle's, table-write-lifecycle.service.ts). */
export const pendingOriginOf = (t: TenantContext): PendingOrigin => ({
  databaseId: t.database.id,
  databaseName: t.database.name,
  requestId: t.requestId,
});

/** Splits a table identifier into its namespace and name; a table needs a name. */
export function splitTableId(id: string[]): { ns: string[]; name: string } {
  if (id.length === 0) throw Errors.invalidInput('a table identifier needs at least a table name');
  return { ns: id.slice(0, -1), name: id[id.length - 1] };
}

export interface DescribeOptions {
  withTableUri: boolean;
  loadDetailedMetadata: boolean;
  checkDeclared: boolean;
  branch?: string;
  /** The table version to describe (the official remote client's `checkout`); latest when absent. */
  version?: number;
  /** A tag whose version to describe (instead of `version`/`branch`). */
  tag?: string;
  /** How the asking client spells Arrow types in `schema` (see src/engine/arrow/arrow-json-schema.ts). */
  schemaDialect: SchemaDialect;
  /** false: the answer carries no storage_options. */
  vendCredentials?: boolean | null;
}

/** The job a drop's storage clean-up becomes when it outlasts DROP_SYNC_BUDGET_MS. */
export const DROP_JOB = 'drop_table';

/**
 * The catalog's table operations (describe, declare, register, drop, deregister, rename, list, stats); the data
 * plane's write lifecycle is TableWriteLifecycle's. Over 400 lines because drop alone (soft delete, protection,
 * the synchronous budget, its job, the pending clean-up) needs a third of it: it is the next piece to move out.
 */
@Injectable()
export class TablesService implements OnModuleInit {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repo: TablesRepository,
    private readonly namespacesRepo: NamespacesRepository,
    private readonly namespaces: NamespacesService,
    private readonly storage: TableStorage,
    private readonly uow: UnitOfWork,
    private readonly engine: LanceEngine,
    private readonly pending: PendingLocations,
    private readonly pendingRepo: PendingLocationsRepository,
    private readonly tenancy: TenancyService,
    private readonly vendor: CredentialVendor,
    private readonly audit: AuditService,
    private readonly adoption: VersionAdoption,
    private readonly jobs: JobsService,
    private readonly quotas: QuotaService,
    private readonly meter: UsageMeter,
    private readonly dropPolicy: DropPolicy,
    private readonly droppedRepo: DroppedTablesRepository,
    private readonly writeSignals: TableWriteSignals,
  ) {}

  onModuleInit(): void {
    // A replica that takes over a drop's clean-up job deletes the folder again (deleting what is gone is no error);
    // the pending record left by the replica that died is the reclaimer's, which then finds nothing to delete.
    this.jobs.register(DROP_JOB, async (job) => {
      const location = String(job.spec.location_key);
      await this.storage.remove(location);
      return { location: this.storage.uri(location), removed: true };
    });
  }

  /** A table row, or 404: TableNotFound, or NamespaceNotFound when the namespace itself is missing. */
  async get(t: TenantContext, id: string[]): Promise<TableRow> {
    const { ns, name } = splitTableId(id);
    const row = await this.repo.find(scopeOf(t), encodePath(ns), name);
    if (row) return row;
    await this.namespaces.assertExists(t, ns);
    throw Errors.tableNotFound(display(id));
  }

  /** The table row, or null when the name is free; 404 when the namespace is missing. */
  async lookup(t: TenantContext, id: string[]): Promise<TableRow | null> {
    const { ns, name } = splitTableId(id);
    const row = await this.repo.find(scopeOf(t), encodePath(ns), name);
    if (row) return row;
    await this.namespaces.assertExists(t, ns);
    return null;
  }

  /**
   * The table a clone's `source_location` names, which must be a table of the caller's own catalog (database, and
   * prefix when one is in use): its location as describe and create report it (an absolute path, `file://…` or the
   * store URI), that location relative to the database folder, or its identifier (`ns$table`, with the request's
   * delimiter). Anything else (a path outside the database folder, another database's or prefix's table, data no
   * table of the catalog is registered at) is a 400 or a 404; the engine is only ever given the catalog's location.
   */
  async findCloneSource(t: TenantContext, source: string, delimiter: string): Promise<TableRow> {
    const given = source.trim();
    if (!given) throw Errors.invalidInput('source_location must name a table of this database');
    const looksLikePath = given.includes('/') || given.includes('\\') || given.endsWith('.lance');
    if (looksLikePath) {
      let location: string;
      try {
        // An absolute path is the location a local table reports: resolved like its file:// URI (inside the folder only).
        const asUri = given.startsWith('/') ? `file://${given}` : given;
        location = await this.storage.resolveRegistered(t.database.name, t.catalog, asUri, await this.tenancy.storageProfileOf(t.database));
      } catch (err) {
        if (err instanceof ApiError && err.status === 400) {
          throw Errors.invalidInput(
            `source_location must be a table of this database (its location as describe reports it, that location relative to the ` +
              `database folder, or its identifier): ${given}`,
          );
        }
        throw err;
      }
      const row = await this.repo.findByLocation(scopeOf(t), location);
      const missing = () => Errors.tableNotFound(`no table of this database is registered at source_location ${given}`);
      if (!row) throw missing();
      // The source is read: the caller needs `select` on it, and one it cannot see is "not registered" as above.
      requireOn(t, 'select', 'table', [...decodePath(row.namespacePath), row.name], { hidden: missing });
      return row;
    }
    const id = parseObjectId(given, delimiter);
    const row = await this.get(t, id);
    requireOn(t, 'select', 'table', id);
    return row;
  }

  /**
   * The `storage_options` with which a namespace-mode client reads or reads and writes the table `id` at `location`
   * itself, by what the credential holds on it (docs/access-control.md): read-write with `insert`, `modify` or
   * `manage` (or `create` for the table it is creating), read-only with `select`, nothing with `describe` alone.
   * Undefined when nothing is vended (that, `vend_credentials: false`, a profile with `vend: false`, or neither
   * client options nor a role configured). Never the server's own options.
   */
  async storageOptions(
    t: TenantContext,
    id: readonly string[],
    location: string,
    requested: boolean | null | undefined,
    creating = false,
  ): Promise<Record<string, string> | undefined> {
    if (requested === false) return undefined;
    const writes = t.access.writesTable(id) || (creating && t.access.may('create', 'table', id));
    if (!writes && !t.access.may('select', 'table', id)) return undefined;
    const profile = this.storage.profileOf(location);
    // A credential narrowed by grants gets only credentials confined to the table (static options reach every table).
    return this.vendor.vend(
      profile,
      { uri: this.storage.uri(location), key: this.storage.objectKey(location) },
      writes ? 'write' : 'read',
      true,
      !t.access.unscoped,
    );
  }

  /** Whether the table has data (a declared-only table has none yet). */
  async hasData(row: TableListRow): Promise<boolean> {
    return this.materialized(row);
  }

  /**
   * Declares a table: the catalog entry and an empty folder the client writes Lance data into directly. The
   * folder is made first and removed again if the catalog insert fails, so nothing is left half-made.
   */
  async declare(
    t: TenantContext,
    id: string[],
    body: { location?: string; properties?: Record<string, string>; vend_credentials?: boolean | null },
  ): Promise<DeclareTableResponse> {
    const { ns, name } = splitTableId(id);
    const location = await this.storage.newLocation(t.database.name, t.catalog, await this.tenancy.storageProfileOf(t.database));
    if (body.location !== undefined && body.location !== this.storage.uri(location)) {
      throw Errors.invalidInput(`Cannot declare table ${display(id)} at location ${body.location}: this server chooses table locations`);
    }
    await this.quotas.assertTableRoom(t); // before the folder is made (checked again, exactly, when the row is inserted)
    await this.storage.prepare(location);
    try {
      // The client writes its data itself from here; a new table is due for a measurement as never measured (and
      // within the hour of its creation every 5 min), without a mark (docs/usage-and-quotas.md).
      const row = await this.insert(t, ns, name, location, body.properties ?? {}, false);
      const storageOptions = await this.storageOptions(t, id, row.location, body.vend_credentials, true);
      return {
        location: this.storage.uri(row.location),
        properties: this.presentProperties(row),
        ...(storageOptions ? { storage_options: storageOptions } : {}),
        ...((await this.tenancy.managedVersioningOf(t.database)) ? { managed_versioning: true } : {}),
      };
    } catch (err) {
      await this.storage.remove(location);
      throw err;
    }
  }

  /** Registers existing Lance data inside the database's folder under a table name. */
  async register(
    t: TenantContext,
    id: string[],
    body: { location: string; mode: 'create' | 'overwrite'; properties?: Record<string, string> },
  ): Promise<RegisterTableResponse> {
    const { ns, name } = splitTableId(id);
    const location = await this.storage.resolveRegistered(
      t.database.name,
      t.catalog,
      body.location,
      await this.tenancy.storageProfileOf(t.database),
    );
    const scope = scopeOf(t);
    const row = await this.uow.run(async () => {
      if (!(await this.namespacesRepo.lockShared(scope, encodePath(ns)))) throw Errors.namespaceNotFound(display(ns));
      // Data the gateway is writing or deleting there is not the caller's to claim.
      if (await this.pendingRepo.pendingAt(location)) {
        throw Errors.conflict(`location ${body.location} is being written or deleted by the gateway`);
      }
      // A dropped table keeps its folder until undropped or purged: it is not the caller's to claim either.
      if (await this.droppedRepo.droppedAt(location)) {
        throw Errors.conflict(`location ${body.location} belongs to a dropped table (undrop or purge it first)`);
      }
      const values = { namespacePath: encodePath(ns), name, location, properties: body.properties ?? {}, materialized: true };
      // A new name needs room under max_tables; overwriting a registered name replaces it.
      await this.quotas.assertTableRoom(
        t,
        true,
        async () => body.mode === 'overwrite' && !!(await this.repo.find(scope, encodePath(ns), name)),
      );
      const inserted = await this.repo.insert(scope, values);
      if (inserted === 'location-taken') throw this.locationTaken(body.location);
      if (inserted !== 'name-taken') {
        await this.audit.recordWithChange();
        return inserted;
      }
      if (body.mode === 'create') throw Errors.tableAlreadyExists(display(id));
      // Overwrite replaces the catalog entry (the caller needs `manage` on it); the registered data stays where it is.
      requireOn(t, 'manage', 'table', id);
      const existing = await this.repo.find(scope, encodePath(ns), name);
      if (existing) this.dropPolicy.assertTableNotProtected(existing.properties, id);
      if (existing) await this.repo.deleteById(existing.id);
      const again = await this.repo.insert(scope, values);
      if (again === 'location-taken') throw this.locationTaken(body.location);
      if (again === 'name-taken') throw Errors.concurrentModification(`table '${display(id)}' was modified concurrently`);
      await this.audit.recordWithChange();
      return again;
    });
    // A database with catalog-managed versions takes over the registered table's versions from storage.
    await this.adoption.afterCommit(row.location);
    // The location as the caller gave it, as the reference answers (not the server's absolute path).
    return { location: body.location, properties: this.presentProperties(row) };
  }

  async describe(t: TenantContext, id: string[], opts: DescribeOptions): Promise<DescribeTableResponse> {
    const row = await this.get(t, id);
    // A writer that opens the table may write it directly (namespace mode): its size is due for a re-read. A Set add
    // in memory (the meter's next flush marks it in the catalog once), no statement on the read path.
    const writer = t.access.writesTable(id);
    if (writer) this.meter.touch(row.id);
    const { ns, name } = splitTableId(id);
    const abs = this.storage.uri(row.location);
    const out: DescribeTableResponse = {
      table: name,
      namespace: ns,
      location: abs,
      table_uri: abs,
      properties: this.presentProperties(row),
    };
    const storageOptions = await this.storageOptions(t, id, row.location, opts.vendCredentials);
    if (storageOptions) out.storage_options = storageOptions;
    // The namespace-mode client then commits through CreateTableVersion and reads versions from the catalog.
    if (await this.tenancy.managedVersioningOf(t.database)) out.managed_versioning = true;
    // One look at storage at most while the catalog does not know of data (a namespace-mode client may have written
    // some directly since); once seen it is remembered, and a table known to have data needs no look here.
    const hasData = await this.materialized(row);
    // A namespace-mode writer's table with data is due for maintenance after the writes it may make
    // (docs/maintenance.md); a remote-mode client writes through the gateway, whose commits queue it themselves. A
    // table without data has nothing to maintain yet: a fleet of declared tables queues no job per describe.
    if (writer && hasData && opts.schemaDialect === 'namespace') this.writeSignals.touched(row.id);
    if (opts.checkDeclared || opts.loadDetailedMetadata) out.is_only_declared = !hasData;
    // Version and schema of written tables: the official remote client opens tables with describe and reads both.
    if (out.is_only_declared !== true) {
      if (opts.tag !== undefined && (opts.version !== undefined || branchOf(opts.branch))) {
        throw Errors.invalidInput('give a tag, or a version and/or a branch, not both');
      }
      if (opts.tag !== undefined && !hasData)
        throw Errors.tagNotFound(`tag '${opts.tag}' not found: table '${display(id)}' has no data yet`);
      const data = !hasData
        ? null
        : opts.tag !== undefined
          ? await this.engine.describeTag(row.location, opts.schemaDialect, opts.tag)
          : await this.engine.describe(row.location, opts.schemaDialect, opts.version, opts.branch, true);
      if (data) {
        out.version = data.version;
        out.schema = data.schema;
      } else if (branchOf(opts.branch)) {
        throw Errors.branchNotFound(`branch '${branchOf(opts.branch)}' not found: table '${display(id)}' has no data yet`);
      } else if (opts.version !== undefined) {
        throw Errors.tableVersionNotFound(`version ${opts.version} not found`);
      }
    }
    return out;
  }

  /**
   * Drops the table. Under the database's soft delete profile (docs/soft-delete.md) its row moves to
   * dropped_tables with its data in place, until undropped or purged; under the hard one the row goes and its folder
   * is recorded for clean-up in one statement, then the folder is deleted (by the reclaimer, should this process die
   * first). A protected table (property protected=true) is refused (409). Either way the name is free at once, and
   * the audit record carries the location and the last version.
   */
  async drop(t: TenantContext, id: string[]): Promise<DropTableResponse> {
    const { ns, name } = splitTableId(id);
    const scope = scopeOf(t);
    const before = await this.get(t, id);
    this.dropPolicy.assertTableNotProtected(before.properties, id);
    const policy = await this.dropPolicy.of(t.database.id);
    const lastVersion = await this.lastVersionOf(before);
    if (policy.profile === 'soft') {
      const dropped = await this.uow.run(async () => {
        const locked = await this.droppedRepo.lockLive(scope, encodePath(ns), name);
        if (!locked) return null;
        this.dropPolicy.assertTableNotProtected(locked.properties, id);
        const moved = await this.droppedRepo.softDrop(
          locked.id,
          { retentionSeconds: policy.retentionSeconds, droppedBy: t.principal, requestId: t.requestId ?? null },
          locked.id === before.id ? lastVersion : null,
        );
        if (moved) {
          await this.audit.recordWithChange({
            details: {
              location: this.storage.uri(moved.location),
              last_version: moved.lastVersion,
              profile: 'soft',
              dropped_id: moved.id,
              purge_after: moved.purgeAfter.toISOString(),
            },
          });
        }
        return moved;
      });
      if (!dropped) throw Errors.tableNotFound(display(id));
      return { id, location: this.storage.uri(dropped.location), properties: { ...dropped.properties } };
    }
    const v = this.pending.values(pendingOriginOf(t), '', 'cleanup');
    const row = await this.uow.run(async () => {
      const locked = await this.droppedRepo.lockLive(scope, encodePath(ns), name);
      if (locked) this.dropPolicy.assertTableNotProtected(locked.properties, id);
      const removed = await this.repo.deleteRecordingCleanup(scope, encodePath(ns), name, v);
      if (removed) {
        await this.audit.recordWithChange({
          details: {
            location: this.storage.uri(removed.location),
            last_version: removed.id === before.id ? lastVersion : null,
            profile: 'hard',
          },
        });
      }
      return removed;
    });
    if (!row) {
      await this.namespaces.assertExists(t, ns);
      throw Errors.tableNotFound(display(id));
    }
    const answer = { id, location: this.storage.uri(row.location), properties: this.presentProperties(row) };
    const cleanup = this.pending.cleanUp(this.pending.watch({ ...v, location: row.location }));
    if (await this.within(cleanup, this.config.dropSyncBudgetMs)) return answer;
    // A large table: the table is gone from the catalog; its folder's deletion goes on as a job the client may wait on.
    const jobId = await this.jobs.adopt(
      t,
      id,
      DROP_JOB,
      { table: id[id.length - 1], table_id: id, location: answer.location, location_key: row.location },
      async () => {
        if (!(await cleanup)) throw Errors.serviceUnavailable('the folder could not be deleted now; the reclaimer will delete it');
        return { location: answer.location, removed: true };
      },
    );
    return { ...answer, job_id: jobId };
  }

  /** The table's latest version (main), for the record of its drop; null without data or when it cannot be read. */
  private async lastVersionOf(row: TableRow): Promise<number | null> {
    if (!(await this.materialized(row).catch(() => false))) return null;
    return this.engine.latestVersion(row.location).catch(() => null);
  }

  /** Whether `p` settles within `ms` (0: never waits). */
  private async within(p: Promise<unknown>, ms: number): Promise<boolean> {
    if (ms <= 0) return false;
    let timer: NodeJS.Timeout | undefined;
    const budget = new Promise<false>((r) => (timer = setTimeout(() => r(false), ms)));
    try {
      return await Promise.race([
        p.then(
          () => true as const,
          () => true as const,
        ),
        budget,
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Forgets the table but keeps its data (it can be registered again). */
  async deregister(t: TenantContext, id: string[]): Promise<DeregisterTableResponse> {
    this.dropPolicy.assertTableNotProtected((await this.get(t, id)).properties, id);
    const row = await this.removeRow(t, id);
    return { id, location: this.storage.uri(row.location), properties: this.presentProperties(row) };
  }

  /** Renames in the catalog only: the data stays in its folder (also across namespaces). */
  async rename(t: TenantContext, id: string[], newName: string, newNamespace?: string[] | null): Promise<RenameTableResponse> {
    assertName(newName, 'new_table_name');
    const { ns } = splitTableId(id);
    const targetNs = newNamespace ?? ns;
    targetNs.forEach((p) => assertName(p, 'new_namespace_id component'));
    const scope = scopeOf(t);
    const row = await this.get(t, id);
    // The destination is a table the caller creates (docs/access-control.md).
    requireOn(t, 'create', 'table', [...targetNs, newName], { creating: true });
    await this.uow.run(async () => {
      if (!(await this.namespacesRepo.lockShared(scope, encodePath(targetNs)))) {
        throw Errors.namespaceNotFound(display(targetNs));
      }
      const r = await this.repo.rename(row.id, encodePath(targetNs), newName);
      if (r === 'exists') throw Errors.tableAlreadyExists(`Destination table '${display([...targetNs, newName])}' already exists`);
      if (r === 'gone') throw Errors.tableNotFound(display(id));
      await this.audit.recordWithChange();
    });
    return {};
  }

  async stats(t: TenantContext, id: string[], branch?: string): Promise<GetTableStatsResponse> {
    const row = await this.get(t, id);
    const hasData = await this.materialized(row);
    // A table without data has no branches: its zero statistics are main's, never a branch's.
    if (branchOf(branch) && !hasData) {
      throw Errors.branchNotFound(`branch '${branchOf(branch)}' not found: table '${display(id)}' has no data yet`);
    }
    return this.engine.stats(row.location, branch ?? undefined, hasData);
  }

  /** Tables directly in one namespace, by name. */
  async listInNamespace(
    t: TenantContext,
    ns: string[],
    page: PageRequest,
    includeDeclared: boolean,
    prefix?: string,
  ): Promise<ListTablesResponse> {
    await this.namespaces.assertExists(t, ns);
    const scope = scopeOf(t);
    const nsPath = encodePath(ns);
    // A scoped credential sees only the tables it holds a privilege on, filtered before the page is cut.
    const only = t.access.tablesIn(ns) ?? undefined;
    const { rows, ...next } = await paginate(page, this.config, {
      isKey: isString,
      fetch: (after, take) => this.repo.listInNamespace(scope, nsPath, after, take, !includeDeclared, only, prefix),
      keyOf: (r: ListedTable) => r.name,
      keep: includeDeclared ? undefined : (rows) => this.onlyMaterialized(rows),
    });
    return { tables: rows.map((r) => r.name), ...next };
  }

  /** docs/rest-contract.md §4.6: every table of the database, recursively, as full identifiers joined by `delimiter`. */
  async listAll(t: TenantContext, delimiter: string, page: PageRequest, includeDeclared: boolean): Promise<ListTablesResponse> {
    const scope = scopeOf(t);
    const filter = t.access.tableFilter();
    const only = filter
      ? {
          namespaces: filter.namespaces.map(encodePath),
          tables: filter.tables.map((x) => ({ namespacePath: encodePath(x.namespace), name: x.name })),
        }
      : undefined;
    const { rows, ...next } = await paginate(page, this.config, {
      isKey: isStringPair,
      fetch: (after, take) => this.repo.listAll(scope, after, take, !includeDeclared, only),
      keyOf: (r: ListedTable): [string, string] => [r.namespacePath, r.name],
      keep: includeDeclared ? undefined : (rows) => this.onlyMaterialized(rows),
    });
    // The namespace path's components joined by the delimiter, then the name (a root table: the name alone). A page
    // comes in namespace order, so each namespace's prefix is made once, not once per row.
    let path: string | undefined;
    let prefix = '';
    const full = (r: ListedTable) => {
      if (r.namespacePath === '') return r.name;
      if (r.namespacePath !== path) {
        path = r.namespacePath;
        prefix = path.split(PATH_SEP).join(delimiter) + delimiter;
      }
      return prefix + r.name;
    };
    return { tables: rows.map(full), ...next };
  }

  /** Inserts a table row (namespace locked, quota checked, audited); also TableWriteLifecycle.registerWritten's. */
  async insert(
    t: TenantContext,
    ns: string[],
    name: string,
    location: string,
    properties: Record<string, string>,
    materialized: boolean,
    auditDetails: Record<string, unknown> = {},
    cloneSourceId?: string,
  ): Promise<TableRow> {
    const scope = scopeOf(t);
    return this.uow.run(async () => {
      if (!(await this.namespacesRepo.lockShared(scope, encodePath(ns)))) throw Errors.namespaceNotFound(display(ns));
      await this.quotas.assertTableRoom(t, true);
      const row = await this.repo.insert(scope, { namespacePath: encodePath(ns), name, location, properties, materialized, cloneSourceId });
      if (row === 'name-taken') throw Errors.tableAlreadyExists(display([...ns, name]));
      if (row === 'location-taken') throw this.locationTaken(location);
      await this.audit.recordWithChange({ details: auditDetails });
      return row;
    });
  }

  private async removeRow(t: TenantContext, id: string[]): Promise<TableRow> {
    const { ns, name } = splitTableId(id);
    const row = await this.uow.run(async () => {
      const removed = await this.repo.delete(scopeOf(t), encodePath(ns), name);
      if (removed) await this.audit.recordWithChange();
      return removed;
    });
    if (row) return row;
    await this.namespaces.assertExists(t, ns);
    throw Errors.tableNotFound(display(id));
  }

  /** Whether the table has data on storage; remembered in the catalog once seen. */
  private async materialized(row: TableListRow): Promise<boolean> {
    if (row.materializedAt) return true;
    const has = await this.storage.hasData(row.location);
    if (has) await this.repo.markMaterialized([row.id]);
    return has;
  }

  /** The listed tables that have data: those the catalog knows of, and those found on storage (then remembered). */
  private async onlyMaterialized(rows: ListedTable[]): Promise<ListedTable[]> {
    const declared = rows.flatMap((row) => (row.declared ? [{ row, ...row.declared }] : []));
    if (declared.length === 0) return rows;
    const flags = await Promise.all(declared.map((d) => this.storage.hasData(d.location)));
    const found = declared.filter((_, i) => flags[i]);
    await this.repo.markMaterialized(found.map((d) => d.id));
    const written = new Set(found.map((d) => d.row));
    return rows.filter((r) => !r.declared || written.has(r));
  }

  private locationTaken(location: string) {
    return Errors.conflict(`location ${location} is already used by another table of this database`);
  }

  private presentProperties(row: TableRow): Record<string, string> {
    return { ...row.properties };
  }
}
