import { Inject, Injectable, Logger } from '@nestjs/common';
import { Errors } from '../../../platform/http/errors';
import { displayId as display } from '../../../platform/http/ids';
import { decodePageToken, encodePageToken } from '../../../platform/http/pagination';
import type { TableVersion } from './table-versions.schemas';
import { APP_CONFIG, AppConfig } from '../../../platform/config/config';
import { UnitOfWork } from '../../../platform/db/unit-of-work';
import { branchOf } from '../../../engine/lance/lance-engine';
import { TableStorage } from '../../../engine/storage/table-storage.service';
import { AuditService } from '../../audit';
import { TenancyService, TenantContext } from '../../identity';
import { TableRow } from '../tables/tables.repository';
import { TablesService } from '../tables/tables.service';
import { TableVersionRow, TableVersionsRepository } from './table-versions.repository';
import { TableWriteSignals } from '../tables/table-write-signals';
import { VersionAdoption } from './version-adoption.service';

/** A CreateTableVersion request (one entry of a batch), as validated. */
export interface VersionEntry {
  id: string[];
  version: number;
  manifest_path: string;
  manifest_size?: number;
  e_tag?: string;
  metadata?: Record<string, string>;
  naming_scheme?: string;
  branch?: string;
}

/** A BatchDeleteTableVersions request, as validated. */
export interface DeleteEntry {
  id: string[];
  branch?: string;
  ranges: Array<{ start_version: number; end_version: number }>;
}

/** One operation of BatchCommitTables: exactly one of the kinds is set. */
export interface CommitOperation {
  create_table_version?: VersionEntry;
  delete_table_versions?: DeleteEntry;
  declare_table?: unknown;
  deregister_table?: unknown;
}

/** ListTableVersions paging and order (the spec's query parameters). */
export interface VersionListing {
  branch?: string;
  descending?: boolean;
  page_token?: string;
  limit?: number;
}

const U64_MAX = (1n << 64n) - 1n;
/** A manifest file name as Lance writes it (final or staging): no folder, no `..`. */
const FILE_NAME = /^[A-Za-z0-9._-]+$/;

/** A version entry resolved against its table: where its staging manifest is and where the final one goes. */
interface Resolved {
  entry: VersionEntry;
  row: TableRow;
  branch: string;
  /** Location of the manifest the writer staged. */
  staging: string;
  /** Location of the version's manifest (Lance's V1/V2 name in the branch's `_versions`). */
  final: string;
  /** `final` relative to the table's folder, as recorded. */
  manifestFile: string;
  namingScheme: 'V1' | 'V2';
}

/**
 * Catalog-managed versions (the spec's `managed_versioning`), for the tables of databases that enable it. A writer
 * (the official client in namespace mode) writes its new manifest to a staging file next to the table's versions and
 * calls CreateTableVersion; the version is claimed by inserting its catalog row, and in the same unit of work the
 * staging manifest is published under the version's own name with put-if-absent. The row is the arbiter: the second
 * writer of a version gets 409 (code 14), re-reads the latest version and retries. ListTableVersions and
 * DescribeTableVersion answer from the catalog, so which versions exist, and which is the latest, is the catalog's
 * word. Batch operations commit several tables' versions in one transaction: all of them or none.
 */
@Injectable()
export class ManagedVersionsService {
  private readonly log = new Logger('ManagedVersions');
  private readonly maxListLimit: number;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly repo: TableVersionsRepository,
    private readonly tables: TablesService,
    private readonly tenancy: TenancyService,
    private readonly storage: TableStorage,
    private readonly uow: UnitOfWork,
    private readonly audit: AuditService,
    private readonly adoption: VersionAdoption,
    private readonly signals: TableWriteSignals,
  ) {
    this.maxListLimit = config.listMaxLimit;
  }

  /** Whether the tables of the caller's database have catalog-managed versions. */
  isManaged(t: TenantContext): Promise<boolean> {
    return this.tenancy.managedVersioningOf(t.database);
  }

  // ---------------------------------------------------------------- reads

  /** The versions of a managed table (of `branch`), from the catalog: oldest first, or newest first with `descending`. */
  async list(t: TenantContext, id: string[], q: VersionListing): Promise<{ versions: TableVersion[]; page_token?: string }> {
    const row = await this.tables.get(t, id);
    const branch = this.branchKey(q.branch);
    const after = decodePageToken(q.page_token, (v): v is number => Number.isInteger(v));
    const limit = q.limit === undefined ? undefined : Math.min(q.limit, this.maxListLimit);
    // One more than asked for tells whether there is a next page.
    const rows = await this.repo.list(row.id, branch, {
      descending: !!q.descending,
      after,
      limit: limit === undefined ? undefined : limit + 1,
    });
    const page = limit === undefined ? rows : rows.slice(0, limit);
    const versions = page.map((r) => this.present(row, r));
    const more = limit !== undefined && rows.length > limit && page.length > 0;
    return { versions, ...(more ? { page_token: encodePageToken(page[page.length - 1].version) } : {}) };
  }

  /** One version of a managed table (the latest when `version` is absent); 404 (code 11) when the catalog has none. */
  async describe(t: TenantContext, id: string[], version?: number, branch?: string): Promise<{ version: TableVersion }> {
    const row = await this.tables.get(t, id);
    const found = await this.repo.find(row.id, this.branchKey(branch), version);
    if (!found) throw Errors.tableVersionNotFound(`version ${version ?? '(latest)'} of table '${display(id)}' not found`);
    return { version: this.present(row, found) };
  }

  // ---------------------------------------------------------------- commits

  /** CreateTableVersion: claims `version` and publishes its manifest; 409 (code 14) when the version exists. */
  async create(t: TenantContext, entry: VersionEntry): Promise<{ version: TableVersion }> {
    const [v] = await this.commit(t, [{ create_table_version: entry }]);
    return { version: v as TableVersion };
  }

  /** BatchCreateTableVersions: every entry's version, or (on any failure) none of them. */
  async batchCreate(t: TenantContext, entries: VersionEntry[]): Promise<{ versions: TableVersion[] }> {
    if (entries.length === 0) throw Errors.invalidInput('entries must not be empty');
    const out = await this.commit(
      t,
      entries.map((e) => ({ create_table_version: e })),
    );
    return { versions: out as TableVersion[] };
  }

  /** BatchDeleteTableVersions: removes version records (never data) in the ranges given. */
  async deleteVersions(t: TenantContext, entry: DeleteEntry): Promise<{ deleted_count: number }> {
    const [n] = await this.commit(t, [{ delete_table_versions: entry }]);
    return { deleted_count: n as number };
  }

  /**
   * BatchCommitTables: CreateTableVersion and DeleteTableVersions operations, on any tables of the database, in one
   * transaction. DeclareTable and DeregisterTable inside a batch are not supported (406, nothing applied).
   */
  async batchCommit(t: TenantContext, operations: CommitOperation[]): Promise<{ results: Array<Record<string, unknown>> }> {
    if (operations.length === 0) throw Errors.invalidInput('operations must not be empty');
    operations.forEach((op, i) => {
      const kinds = (['create_table_version', 'delete_table_versions', 'declare_table', 'deregister_table'] as const).filter(
        (k) => op[k] !== undefined && op[k] !== null,
      );
      if (kinds.length !== 1) throw Errors.invalidInput(`operations[${i}] must set exactly one operation kind, found ${kinds.length}`);
      if (kinds[0] === 'declare_table' || kinds[0] === 'deregister_table') {
        throw Errors.unsupported(
          `operations[${i}]: ${kinds[0]} inside batch-commit is not supported by this server (use the table's own route); nothing was applied`,
        );
      }
    });
    const out = await this.commit(t, operations);
    return {
      results: operations.map((op, i) =>
        op.create_table_version ? { create_table_version: { version: out[i] } } : { delete_table_versions: { deleted_count: out[i] } },
      ),
    };
  }

  /**
   * The one commit path: resolves every operation's table first (404s before anything changes), then, in one unit
   * of work, inserts the version rows and publishes their manifests (put-if-absent), and deletes the ranges asked
   * for. Any failure rolls the unit back and removes the manifests this call published, so nothing of the batch is
   * visible. Staging manifests are removed once the unit has committed.
   */
  private async commit(t: TenantContext, operations: CommitOperation[]): Promise<Array<TableVersion | number>> {
    if (!(await this.isManaged(t))) {
      throw Errors.unsupported(
        `database '${t.database.name}' does not manage table versions in the catalog (managed_versioning is off): Lance commits to storage directly`,
      );
    }
    type Planned = { kind: 'create'; r: Resolved } | { kind: 'delete'; row: TableRow; branch: string; entry: DeleteEntry };
    const planned: Planned[] = [];
    for (const op of operations) {
      if (op.create_table_version) planned.push({ kind: 'create', r: await this.resolve(t, op.create_table_version) });
      else if (op.delete_table_versions) {
        const entry = op.delete_table_versions;
        const row = await this.tables.get(t, entry.id);
        planned.push({ kind: 'delete', row, branch: this.branchKey(entry.branch), entry });
      }
    }
    const published: string[] = [];
    /** A version whose manifest name was taken on storage (by the gateway's own engine) though not in the catalog. */
    let lostTo: Resolved | undefined;
    let results: Array<TableVersion | number>;
    try {
      results = await this.uow.run(async () => {
        const out: Array<TableVersion | number> = [];
        for (const p of planned) {
          if (p.kind === 'delete') {
            let n = 0;
            for (const range of p.entry.ranges)
              n += await this.repo.deleteRange(p.row.id, p.branch, range.start_version, range.end_version);
            out.push(n);
            continue;
          }
          const { r } = p;
          const inserted = await this.repo.insert({
            tableId: r.row.id,
            branch: r.branch,
            version: r.entry.version,
            manifestFile: r.manifestFile,
            manifestSize: r.entry.manifest_size ?? null,
            eTag: r.entry.e_tag ?? null,
            namingScheme: r.namingScheme,
            metadata: r.entry.metadata ?? {},
          });
          if (inserted === 'taken') throw this.versionTaken(r);
          if (inserted === 'no-table') throw Errors.tableNotFound(display(r.entry.id));
          if (r.staging !== r.final) {
            if (!(await this.storage.publishIfAbsent(r.staging, r.final).catch((err) => this.publishFailed(r, err)))) {
              lostTo = r;
              throw this.versionTaken(r);
            }
            published.push(r.final);
          } else if (!(await this.exists(r.final))) {
            throw Errors.invalidInput(`manifest_path '${r.entry.manifest_path}' does not exist`);
          }
          out.push(this.present(r.row, inserted));
        }
        await this.audit.recordWithChange({
          details: {
            versions: planned.map((p) =>
              p.kind === 'create'
                ? { table: display(p.r.entry.id), branch: p.r.branch || null, version: p.r.entry.version }
                : { table: display(p.entry.id), branch: p.branch || null, delete: p.entry.ranges },
            ),
          },
        });
        return out;
      });
    } catch (err) {
      // Nothing of the batch may stay visible to a reader that lists the table's storage.
      await Promise.all(
        published.map((f) => this.storage.removeFile(f).catch((e) => this.log.warn(`could not remove ${f}: ${(e as Error).message}`))),
      );
      // The version exists on storage, committed by the gateway's engine and not recorded yet: record it now, so the
      // writer's retry (after this 409) reads it as the latest and commits the next one.
      if (lostTo)
        await this.adoption
          .adopt(lostTo.row.location, lostTo.branch)
          .catch((e) => this.log.warn(`adoption failed: ${(e as Error).message}`));
      throw err;
    }
    // The staging manifests are garbage now (the published copies are the versions).
    await Promise.all(
      planned
        .filter((p): p is { kind: 'create'; r: Resolved } => p.kind === 'create' && p.r.staging !== p.r.final)
        .map((p) =>
          this.storage.removeFile(p.r.staging).catch((e) => this.log.warn(`could not remove staging manifest: ${(e as Error).message}`)),
        ),
    );
    // A namespace-mode writer's commits: table maintenance hears of them.
    for (const p of planned) if (p.kind === 'create') this.signals.touched(p.r.row.id);
    return results;
  }

  /** The table of an entry and the manifest locations it names; 400 for a manifest outside the table's versions. */
  private async resolve(t: TenantContext, entry: VersionEntry): Promise<Resolved> {
    const row = await this.tables.get(t, entry.id);
    const branch = this.branchKey(entry.branch);
    const scheme = (entry.naming_scheme ?? 'V2').toUpperCase();
    if (scheme !== 'V1' && scheme !== 'V2') throw Errors.invalidInput(`naming_scheme must be V1 or V2, got '${entry.naming_scheme}'`);
    const dirRel = branch ? `tree/${branch}/_versions` : '_versions';
    const dir = `${row.location}/${dirRel}`;
    const dirPath = this.storage.objectPath(dir);
    const given = entry.manifest_path.replace(/^\/+/, '');
    const name = given.startsWith(`${dirPath}/`) ? given.slice(dirPath.length + 1) : undefined;
    if (!name || !FILE_NAME.test(name) || name.includes('..')) {
      throw Errors.invalidInput(
        `manifest_path must name a manifest file in the table's ${dirRel} folder (${dirPath}/…), got '${entry.manifest_path}'`,
      );
    }
    const finalName =
      scheme === 'V1' ? `${entry.version}.manifest` : `${(U64_MAX - BigInt(entry.version)).toString().padStart(20, '0')}.manifest`;
    return {
      entry,
      row,
      branch,
      staging: `${dir}/${name}`,
      final: `${dir}/${finalName}`,
      manifestFile: `${dirRel}/${finalName}`,
      namingScheme: scheme,
    };
  }

  /** The branch as recorded: '' for main; a name that could leave the table's folder is refused. */
  private branchKey(branch: string | undefined): string {
    const b = branchOf(branch) ?? '';
    if (b && (!/^[A-Za-z0-9._/-]+$/.test(b) || b.split('/').some((s) => s === '' || s === '.' || s === '..'))) {
      throw Errors.invalidInput(`invalid branch name '${b}'`);
    }
    return b;
  }

  private versionTaken(r: Resolved) {
    const on = r.branch ? ` (branch '${r.branch}')` : '';
    return Errors.concurrentModification(
      `version ${r.entry.version} of table '${display(r.entry.id)}'${on} already exists; re-read the latest version and retry`,
    );
  }

  /** A staging manifest that cannot be read is the caller's (it names no file); anything else is ours. */
  private publishFailed(r: Resolved, err: unknown): never {
    const e = err as NodeJS.ErrnoException & { name?: string; $metadata?: { httpStatusCode?: number } };
    if (e?.code === 'ENOENT' || e?.name === 'NoSuchKey' || e?.name === 'NotFound' || e?.$metadata?.httpStatusCode === 404) {
      throw Errors.invalidInput(`manifest_path '${r.entry.manifest_path}' does not exist`);
    }
    throw err;
  }

  private async exists(file: string): Promise<boolean> {
    try {
      await this.storage.read(file);
      return true;
    } catch {
      return false;
    }
  }

  private present(row: TableRow, v: TableVersionRow): TableVersion {
    const at = new Date(v.createdAt);
    return {
      version: Number(v.version),
      manifest_path: this.storage.objectPath(`${row.location}/${v.manifestFile}`),
      ...(v.manifestSize !== null && v.manifestSize !== undefined ? { manifest_size: Number(v.manifestSize) } : {}),
      ...(v.eTag ? { e_tag: v.eTag } : {}),
      timestamp_millis: at.getTime(),
      timestamp: at.toISOString(),
      metadata: v.metadata ?? {},
    };
  }
}
