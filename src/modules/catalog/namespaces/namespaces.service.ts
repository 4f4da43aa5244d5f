import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../../../platform/config/config';
import { ApiError, ErrorCode, Errors } from '../../../platform/http/errors';
import { decodePath, encodePath, displayId as display } from '../../../platform/http/ids';
import { isString, paginate } from '../../../platform/http/pagination';
import type {
  CreateNamespaceResponse,
  DescribeNamespaceResponse,
  DropNamespaceResponse,
  ListNamespacesResponse,
} from './namespaces.schemas';
import type { PageRequest } from '../../../platform/http/validation/fields';
import { AuditService } from '../../audit';
import { scopeOf, TenantContext } from '../../identity';
import { TransactionsService } from '../transactions/transactions.service';
import { NamespacesRepository, DropHooks } from './namespaces.repository';
import { UnitOfWork } from '../../../platform/db/unit-of-work';
import { QuotaService } from '../../metering';
import { DropPolicy } from '../../databases';
import { DroppedTablesRepository } from '../dropped/dropped-tables.repository';
import { LanceEngine } from '../../../engine/lance/lance-engine';
import { TableStorage } from '../../../engine/storage/table-storage.service';

/** How many tables of a cascade have their last version read (for the audit record and the undrop list) before it. */
const CASCADE_VERSIONS_READ = 200;

export type CreateMode = 'create' | 'existok' | 'overwrite';

/** The property the implementation adds (docs/rest-contract.md §2.1), unless the caller set one of that name. */
export const CREATED_AT_PROPERTY = 'created_at';

export function presentProperties(row: { properties: Record<string, string>; createdAt: Date }): Record<string, string> {
  return { [CREATED_AT_PROPERTY]: new Date(row.createdAt).toISOString(), ...row.properties };
}

@Injectable()
export class NamespacesService {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repo: NamespacesRepository,
    private readonly transactions: TransactionsService,
    private readonly uow: UnitOfWork,
    private readonly audit: AuditService,
    private readonly quotas: QuotaService,
    private readonly dropPolicy: DropPolicy,
    private readonly droppedRepo: DroppedTablesRepository,
    private readonly engine: LanceEngine,
    private readonly storage: TableStorage,
  ) {}

  /**
   * The hooks of a drop of `id` (docs/soft-delete.md): refuse it when anything protected is in the way, and under
   * a soft delete profile move the cascade's tables to dropped_tables (their last versions read beforehand).
   */
  private async dropHooks(t: TenantContext, id: string[], cascade: boolean): Promise<DropHooks> {
    const scope = scopeOf(t);
    const path = encodePath(id);
    const policy = await this.dropPolicy.of(t.database.id);
    const hooks: DropHooks = {
      guard: async () => {
        const found = await this.droppedRepo.protectedInSubtree(scope, path);
        if (!found) return;
        const what =
          found.kind === 'namespace'
            ? `namespace '${display(decodePath(found.path))}'`
            : `table '${display([...decodePath(found.path), found.name as string])}'`;
        throw Errors.invalidTableState(`${what} is protected (property protected=true): clear the flag before dropping '${display(id)}'`);
      },
    };
    if (cascade && policy.profile === 'soft') {
      const versions = new Map<string, number | null>();
      const locations = await this.droppedRepo.locationsInSubtree(scope, path, CASCADE_VERSIONS_READ);
      for (let i = 0; i < locations.length; i += 8) {
        await Promise.all(
          locations.slice(i, i + 8).map(async (l) => versions.set(l, await this.engine.latestVersion(l).catch(() => null))),
        );
      }
      hooks.moveTables = async () =>
        (
          await this.droppedRepo.softDropSubtree(scope, path, {
            retentionSeconds: policy.retentionSeconds,
            droppedBy: t.principal,
            requestId: t.requestId ?? null,
            versions,
          })
        ).map((r) => ({ namespacePath: r.namespacePath, name: r.name, location: r.location, lastVersion: r.lastVersion }));
    }
    return hooks;
  }

  /** The audit details of a drop that removed tables: each one's identifier, location and last version. */
  private droppedDetails(
    dropped: Array<{ namespacePath: string; name: string; location: string; lastVersion: number | null }> | undefined,
    locations: string[],
  ) {
    if (dropped) {
      return {
        profile: 'soft',
        tables: dropped.slice(0, 1000).map((d) => ({
          table: [...decodePath(d.namespacePath), d.name].join('$'),
          location: this.storage.uri(d.location),
          last_version: d.lastVersion,
        })),
      };
    }
    return locations.length ? { profile: 'hard', locations: locations.slice(0, 1000).map((l) => this.storage.uri(l)) } : {};
  }

  async create(
    t: TenantContext,
    id: string[],
    mode: CreateMode,
    properties: Record<string, string> = {},
  ): Promise<CreateNamespaceResponse> {
    if (id.length === 0) {
      if (mode === 'create') throw Errors.namespaceAlreadyExists('root namespace');
      this.audit.nothingChanged();
      return { properties: {} };
    }
    const scope = scopeOf(t);
    const path = encodePath(id);
    const parentPath = encodePath(id.slice(0, -1));
    let cleanup: { txId: string; locations: string[] } | undefined;
    const hooks = mode === 'overwrite' ? await this.dropHooks(t, id, true) : {};
    const row = await this.uow.run(async () => {
      if (!(await this.repo.lockShared(scope, parentPath))) {
        throw Errors.namespaceNotFound(`parent namespace '${display(id.slice(0, -1))}'`);
      }
      const ns = { path, parentPath, name: id[id.length - 1], properties };
      // A new namespace needs room under max_namespaces (an existing one is kept or replaced, not added).
      await this.quotas.assertNamespaceRoom(t, async () => !!(await this.repo.find(scope, path)));
      const inserted = await this.repo.insert(scope, ns);
      if (inserted) {
        await this.audit.recordWithChange();
        return inserted;
      }
      if (mode === 'create') throw Errors.namespaceAlreadyExists(display(id));
      if (mode === 'existok') {
        const existing = await this.repo.find(scope, path);
        if (!existing) throw Errors.concurrentModification(`namespace '${display(id)}' was modified concurrently`);
        this.audit.nothingChanged();
        return existing;
      }
      // Overwrite: drop the existing namespace with everything in it, then create it afresh, atomically.
      const dropped = await this.repo.drop(scope, path, true, hooks);
      if (dropped.kind === 'dropped' && dropped.locations.length > 0) {
        cleanup = {
          txId: await this.transactions.record(t.database.id, 'overwrite_namespace', dropped.locations),
          locations: dropped.locations,
        };
      }
      const again = await this.repo.insert(scope, ns);
      if (!again) throw Errors.concurrentModification(`namespace '${display(id)}' was modified concurrently`);
      await this.audit.recordWithChange(
        dropped.kind === 'dropped' ? { details: this.droppedDetails(dropped.dropped, dropped.locations) } : {},
      );
      return again;
    });
    if (cleanup) await this.transactions.runWithinBudget(cleanup.txId, cleanup.locations);
    return { properties: presentProperties(row) };
  }

  /** Throws 404 unless the namespace exists (the root always does). */
  async assertExists(t: TenantContext, id: string[]): Promise<void> {
    if (id.length === 0) return;
    if (!(await this.repo.find(scopeOf(t), encodePath(id)))) throw Errors.namespaceNotFound(display(id));
  }

  async describe(t: TenantContext, id: string[]): Promise<DescribeNamespaceResponse> {
    if (id.length === 0) return { properties: {} };
    const row = await this.repo.find(scopeOf(t), encodePath(id));
    if (!row) throw Errors.namespaceNotFound(display(id));
    return { properties: presentProperties(row) };
  }

  async list(t: TenantContext, id: string[], page: PageRequest): Promise<ListNamespacesResponse> {
    await this.assertExists(t, id);
    const scope = scopeOf(t);
    const parentPath = encodePath(id);
    // A scoped credential sees only the namespaces on its way to what it holds, filtered before the page is cut.
    const only = t.access.childNamespaces(id) ?? undefined;
    const { rows, ...next } = await paginate(page, this.config, {
      isKey: isString,
      fetch: (after, take) => this.repo.listChildren(scope, parentPath, after, take, only),
      keyOf: (name: string) => name,
    });
    return { namespaces: rows, ...next };
  }

  /**
   * docs/rest-contract.md §4.3. Returns null for "nothing to drop, and that is fine" (mode Skip → 204).
   * Restrict refuses a namespace with any table or child (409, code NamespaceNotEmpty) and drops nothing.
   */
  async drop(
    t: TenantContext,
    id: string[],
    mode: 'fail' | 'skip',
    behavior: 'restrict' | 'cascade',
  ): Promise<DropNamespaceResponse | null> {
    if (id.length === 0) throw Errors.invalidInput('Root namespace cannot be dropped');
    const scope = scopeOf(t);
    const path = encodePath(id);
    let txId: string | undefined;
    // A namespace the credential cannot see is missing for it (its guard let the request through for this answer).
    const hidden = !t.access.visible('namespace', id);
    const hooks = hidden ? {} : await this.dropHooks(t, id, behavior === 'cascade');
    const outcome = await this.uow.run(async () => {
      if (hidden) return { kind: 'not-found' as const };
      const o = await this.repo.drop(scope, path, behavior === 'cascade', hooks);
      if (o.kind === 'dropped' && o.locations.length > 0) {
        txId = await this.transactions.record(t.database.id, 'drop_namespace', o.locations);
      }
      if (o.kind === 'dropped') await this.audit.recordWithChange({ details: this.droppedDetails(o.dropped, o.locations) });
      return o;
    });
    switch (outcome.kind) {
      case 'not-found':
        if (mode === 'skip') {
          this.audit.nothingChanged();
          return null;
        }
        // docs/rest-contract.md §4.3 rule 1: a missing namespace with mode Fail is a 400 (code: NamespaceNotFound).
        throw new ApiError(400, ErrorCode.NamespaceNotFound, display(id));
      case 'not-empty':
        throw Errors.namespaceNotEmpty(`'${display(id)}' (contains ${outcome.children} child objects)`);
      case 'dropped': {
        if (txId && !(await this.transactions.runWithinBudget(txId, outcome.locations))) {
          return { properties: {}, transaction_id: [txId] };
        }
        return { properties: {} };
      }
    }
  }
}
