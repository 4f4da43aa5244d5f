import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, AppConfig, Quotas } from '../../platform/config/config';
import { Errors } from '../../platform/http/errors';
import type { TenantContext } from '../identity';
import { UsageMeter } from './usage-meter.service';
import { UsageRepository } from './usage.repository';

export type QuotaName = 'max_tables' | 'max_namespaces' | 'max_storage_bytes' | 'max_rows_per_write';

/** The refusal: 403, code 15, naming the quota, its limit and the current usage. */
export function quotaExceeded(database: string, quota: QuotaName, limit: number, usage: string): Error {
  return Errors.permissionDenied(`quota exceeded: database '${database}' has ${quota} = ${limit}; ${usage}`);
}

/**
 * Quotas per database (docs/usage-and-quotas.md): the database's own, else the gateway's defaults (QUOTA_*). The
 * quotas travel with the database a request resolved (the key lookup or the tenancy cache), so checking them costs a
 * catalog query only where a count or a size is needed — on creates and writes, never on reads.
 */
@Injectable()
export class QuotaService {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repo: UsageRepository,
    private readonly meter: UsageMeter,
  ) {}

  /** The quotas in force for a database (null: no limit). */
  effective(own: Quotas | undefined): Required<Quotas> {
    const d = this.config.quotas;
    return {
      maxTables: own?.maxTables ?? d.maxTables ?? null,
      maxNamespaces: own?.maxNamespaces ?? d.maxNamespaces ?? null,
      maxStorageBytes: own?.maxStorageBytes ?? d.maxStorageBytes ?? null,
      maxRowsPerWrite: own?.maxRowsPerWrite ?? d.maxRowsPerWrite ?? null,
    };
  }

  /**
   * Before a table is added (create, declare, register): 403 when the database holds max_tables already. With
   * `lock`, inside the unit of work that inserts, creates of one database are serialised so that the count is exact.
   */
  async assertTableRoom(t: TenantContext, lock = false, replaces?: () => Promise<boolean>): Promise<void> {
    const limit = this.effective(t.database.quotas).maxTables;
    if (limit === null || (replaces && (await replaces()))) return;
    if (lock) await this.repo.lockQuota(t.database.id, 'tables');
    const n = await this.repo.tableCount(t.database.id);
    if (n >= limit) throw quotaExceeded(t.database.name, 'max_tables', limit, `it holds ${n} tables`);
  }

  /**
   * Before a namespace is added (in the unit of work that inserts it): 403 when it holds max_namespaces already.
   * `exists`: whether the namespace is there already (then nothing is added; asked only when a limit applies).
   */
  async assertNamespaceRoom(t: TenantContext, exists: () => Promise<boolean>): Promise<void> {
    const limit = this.effective(t.database.quotas).maxNamespaces;
    if (limit === null || (await exists())) return;
    await this.repo.lockQuota(t.database.id, 'namespaces');
    const n = await this.repo.namespaceCount(t.database.id);
    if (n >= limit) throw quotaExceeded(t.database.name, 'max_namespaces', limit, `it holds ${n} namespaces`);
  }

  /** Before a write of `rows` rows is committed: 403 above max_rows_per_write. */
  assertRows(t: TenantContext, rows: number): void {
    const limit = this.effective(t.database.quotas).maxRowsPerWrite;
    if (limit !== null && rows > limit) {
      throw quotaExceeded(t.database.name, 'max_rows_per_write', limit, `this write has ${rows} rows`);
    }
  }

  /**
   * Before a write of `bytes` more bytes is committed: 403 when the database's storage plus `bytes` would pass
   * max_storage_bytes. The storage is the bytes on its store as last measured, plus what writes through the gateway
   * added since (flushed to the catalog by every replica, and this replica's not yet flushed): a database over the
   * quota is refused its very next write here. One catalog query, only when the quota is set.
   */
  async assertStorage(t: TenantContext, bytes: number): Promise<void> {
    (await this.storageCheck(t))(bytes);
  }

  /**
   * assertStorage for a write that grows as it streams: the stored figure is read once, and the check it returns is called with the bytes written so far before each chunk.
   */
  async storageCheck(t: TenantContext): Promise<(bytes: number) => void> {
    const limit = this.effective(t.database.quotas).maxStorageBytes;
    if (limit === null) return () => undefined;
    const used = (await this.repo.storageOf(t.database.id)) + this.meter.unflushedBytes(t.database.name);
    return (bytes) => {
      if (used + bytes > limit) {
        throw quotaExceeded(t.database.name, 'max_storage_bytes', limit, `it stores ${used} bytes and this write adds about ${bytes}`);
      }
    };
  }
}
