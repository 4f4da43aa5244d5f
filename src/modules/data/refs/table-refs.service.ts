import { Inject, Injectable } from '@nestjs/common';
import type * as lancedb from '@lancedb/lancedb';
import { Errors } from '../../../platform/http/errors';
import { decodePageToken, encodePageToken, isString } from '../../../platform/http/pagination';
import type { EmptyResponse } from '../dataplane.schemas';
import { APP_CONFIG, AppConfig } from '../../../platform/config/config';
import { UnitOfWork } from '../../../platform/db/unit-of-work';
import { branchOf, LanceEngine } from '../../../engine/lance/lance-engine';
import { TableStorage } from '../../../engine/storage/table-storage.service';
import { TableVersionsRepository } from '../../catalog';
import { TenantContext } from '../../identity';
import { DataTables } from '../data-tables.service';
import { display } from '../dataplane.types';
import type { BranchContents, GetTableTagVersionResponse, TagContents } from './table-refs.schemas';

/** Paging of the tag and branch lists (the spec's query parameters): by name, all unless `limit` is given. */
export interface RefPage {
  page_token?: string;
  limit?: number;
}

/**
 * A ref name whose file may be read: what Lance accepts for a tag (letters, digits, `.`, `-`, `_`), never `..`.
 * Anything else is never turned into a storage path (the engine refuses such names anyway).
 */
const SAFE_REF = /^[A-Za-z0-9._-]+$/;
const safeRef = (name: string) => SAFE_REF.test(name) && !name.includes('..');

type Tags = Awaited<ReturnType<lancedb.Table['tags']>>;
type Branches = Awaited<ReturnType<lancedb.Table['branches']>>;

/**
 * Tags and branches of a table: real Lance refs (`_refs/tags`, `_refs/branches` in the table's folder), so a client
 * that reads the data itself (namespace mode) sees the same tags and branches as the gateway, both ways. The engine
 * does every change; the ref files are only read, for what the engine binding does not report (a tag's branch, a
 * branch's creation time and metadata).
 */
@Injectable()
export class TableRefsService {
  private readonly maxListLimit: number;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly engine: LanceEngine,
    private readonly storage: TableStorage,
    private readonly data: DataTables,
    private readonly versions: TableVersionsRepository,
    private readonly uow: UnitOfWork,
  ) {
    this.maxListLimit = config.listMaxLimit;
  }

  // ---------------------------------------------------------------- tags

  /** Every tag of the table (tags are the table's, whichever branch they point into), by name. */
  async listTags(t: TenantContext, id: string[], page: RefPage): Promise<{ tags: Record<string, TagContents>; page_token?: string }> {
    const row = await this.data.written(t, id);
    const listed = await this.engine.read(row.location, async (table) => {
      const all = await (await table.tags()).list();
      return Object.entries(all).map(([name, c]) => ({ name, version: Number(c.version), manifestSize: Number(c.manifestSize) }));
    });
    const { items, page_token } = this.paged(listed, page);
    const tags: Record<string, TagContents> = {};
    await Promise.all(
      items.map(async (x) => {
        const branch = await this.tagBranch(row.location, x.name);
        tags[x.name] = { version: x.version, manifestSize: x.manifestSize, ...(branch ? { branch } : {}) };
      }),
    );
    return { tags: sortedByKey(tags), ...(page_token ? { page_token } : {}) };
  }

  /** The version a tag points to, and its branch when not main; 404 (code 8) for an unknown tag. */
  async tagVersion(t: TenantContext, id: string[], tag: string): Promise<GetTableTagVersionResponse> {
    const row = await this.data.written(t, id);
    const version = await this.engine.read(row.location, async (table) => Number(await (await table.tags()).getVersion(tag)));
    const branch = await this.tagBranch(row.location, tag);
    return { version, ...(branch ? { branch } : {}) };
  }

  /** A new tag at `version` of `branch` (main when absent): 409 (code 9) when it exists, 404 (code 11) for no such version. */
  createTag(t: TenantContext, id: string[], tag: string, version: number, branch?: string): Promise<EmptyResponse> {
    return this.changeTag(t, id, (tags) => tags.create(tag, version), { tag, version, branch: branchOf(branch) ?? null }, branch);
  }

  /** Moves a tag to `version` of `branch` (main when absent): 404 (code 8) for an unknown tag. */
  updateTag(t: TenantContext, id: string[], tag: string, version: number, branch?: string): Promise<EmptyResponse> {
    return this.changeTag(t, id, (tags) => tags.update(tag, version), { tag, version, branch: branchOf(branch) ?? null }, branch);
  }

  /** Removes a tag (the data it pointed to stays, as versions do): 404 (code 8) for an unknown tag. */
  deleteTag(t: TenantContext, id: string[], tag: string): Promise<EmptyResponse> {
    return this.changeTag(t, id, (tags) => tags.delete(tag), { tag });
  }

  /** One change of the table's tags, through the engine on `branch` (main when absent), with its audit record. */
  private async changeTag(
    t: TenantContext,
    id: string[],
    change: (tags: Tags) => Promise<void>,
    audit: Record<string, unknown>,
    branch?: string,
  ): Promise<EmptyResponse> {
    const row = await this.data.written(t, id);
    await this.engine.withTable(
      row.location,
      async (table) => {
        const tags = await table.tags();
        await this.data.commit(
          () => change(tags),
          () => audit,
        );
      },
      { branch },
    );
    return {};
  }

  /** The branch a tag points into, from its ref file (undefined for main, or when it cannot be read). */
  private async tagBranch(location: string, tag: string): Promise<string | undefined> {
    const file = await this.refFile(location, 'tags', tag);
    const b = file?.branch;
    return typeof b === 'string' ? branchOf(b) : undefined;
  }

  // ---------------------------------------------------------------- branches

  async listBranches(
    t: TenantContext,
    id: string[],
    page: RefPage,
  ): Promise<{ branches: Record<string, BranchContents>; page_token?: string }> {
    const row = await this.data.written(t, id);
    const listed = await this.branchesOf(row.location);
    const { items, page_token } = this.paged(listed, page);
    const branches: Record<string, BranchContents> = {};
    await Promise.all(
      items.map(async (x) => {
        const file = await this.refFile(row.location, 'branches', x.name);
        const createAt = Number(file?.createAt);
        const metadata = file?.metadata;
        branches[x.name] = {
          ...(x.parentBranch ? { parentBranch: x.parentBranch } : {}),
          parentVersion: x.parentVersion,
          createAt: Number.isSafeInteger(createAt) && createAt >= 0 ? createAt : 0,
          manifestSize: x.manifestSize,
          ...(isStringMap(metadata) ? { metadata } : {}),
        };
      }),
    );
    return { branches: sortedByKey(branches), ...(page_token ? { page_token } : {}) };
  }

  /**
   * A new branch forked from `fromBranch` (main when absent) at `fromVersion` (its latest when absent). 409 (code 23)
   * when the branch exists, 404 (code 22) for an unknown source branch, 404 (code 11) for no such version.
   */
  async createBranch(t: TenantContext, id: string[], name: string, fromBranch?: string, fromVersion?: number): Promise<EmptyResponse> {
    const row = await this.data.written(t, id);
    const target = name.trim();
    if (!branchOf(target)) throw Errors.branchAlreadyExists(`branch '${target || 'main'}' already exists (main always does)`);
    // The engine does not detect an existing branch (it fails inside), so it is looked for first.
    const existing = await this.branchesOf(row.location);
    if (existing.some((b) => b.name === target)) {
      throw Errors.branchAlreadyExists(`branch '${target}' of table '${display(id)}' already exists`);
    }
    const source = branchOf(fromBranch);
    // Asked for at a version, the engine reports an unknown source branch as that version's missing manifest (code 11).
    if (source && fromVersion !== undefined && !existing.some((b) => b.name === source)) {
      throw Errors.branchNotFound(`branch '${source}' of table '${display(id)}' not found`);
    }
    // Version records under the new name can only be a deleted branch's (one a namespace-mode client deleted on
    // storage itself, or one whose catalog commit failed): removed with the create, the new branch never lists them.
    await this.changeBranch(
      row,
      target,
      async (branches) => {
        try {
          (await branches.create(target, source, fromVersion)).close();
        } catch (err) {
          // A create of a branch whose folder exists (a concurrent create of the same name that got there first)
          // fails inside the engine with this message; it is the caller's 409 all the same.
          const raw = err instanceof Error ? err.message : String(err);
          const exists =
            /Clone operation should not enter build_manifest/.test(raw) ||
            (await this.branchesOf(row.location).then(
              (all) => all.some((b) => b.name === target),
              () => false,
            ));
          if (exists) throw Errors.branchAlreadyExists(`branch '${target}' of table '${display(id)}' already exists`);
          throw this.engine.translate(err, { branch: source });
        }
      },
      { branch: target, from_branch: source ?? null, from_version: fromVersion ?? null },
    );
    return {};
  }

  /**
   * Removes a branch, its data and its version records (catalog-managed versions): 404 (code 22) for an unknown
   * branch, 409 (code 19) while tags point into it.
   */
  async deleteBranch(t: TenantContext, id: string[], name: string): Promise<EmptyResponse> {
    const row = await this.data.written(t, id);
    const target = branchOf(name);
    if (!target) throw Errors.invalidInput('the main branch cannot be deleted');
    await this.changeBranch(
      row,
      target,
      (branches) => branches.delete(target).catch((err: unknown) => Promise.reject(this.engine.translate(err, { branch: target }))),
      { branch: target },
    );
    // Kept read handles of the table (one may be of the deleted branch) are reopened on next use.
    this.engine.forget(row.location);
    return {};
  }

  /**
   * A create or delete of branch `target`, with its audit record. The catalog's version records of `target` are
   * removed first and the engine's change runs inside their unit of work: a failed catalog delete fails the request
   * before the engine changes anything, a failed engine change rolls the records back (they may be a concurrent
   * creator's).
   */
  private async changeBranch(
    row: { id: string; location: string },
    target: string,
    change: (branches: Branches) => Promise<void>,
    audit: Record<string, unknown>,
  ): Promise<void> {
    await this.engine.withTable(row.location, async (table) => {
      const branches = await table.branches();
      await this.data.commit(
        () =>
          this.uow.run(async () => {
            await this.versions.deleteBranch(row.id, target);
            await change(branches);
          }),
        () => audit,
      );
    });
  }

  /**
   * branches/diff and branches/cherry_pick: the engine binding answers "Branch diffs are only supported on Enterprise
   * tables" for every open Lance table, so 406 (code 0) saying so, once the table is known to exist.
   */
  async branchMergeUnsupported(t: TenantContext, id: string[], what: string, fromBranch: string): Promise<never> {
    await this.data.written(t, id);
    throw Errors.unsupported(
      `branch '${fromBranch}' of table '${display(id)}' cannot be ${what}: the open Lance engine this gateway runs ` +
        'supports branch diffs and cherry-picks only for LanceDB Enterprise tables',
    );
  }

  private async branchesOf(
    location: string,
  ): Promise<Array<{ name: string; parentBranch?: string; parentVersion: number; manifestSize: number }>> {
    return this.engine.read(location, async (table) => {
      const all = await (await table.branches()).list();
      return Object.entries(all).map(([name, c]) => ({
        name,
        parentBranch: branchOf(c.parentBranch ?? undefined),
        parentVersion: Number(c.parentVersion),
        manifestSize: Number(c.manifestSize),
      }));
    });
  }

  // ---------------------------------------------------------------- shared

  /** One page of refs by name: after `page_token`, at most `limit` (all when absent, capped at LIST_MAX_LIMIT). */
  private paged<T extends { name: string }>(all: T[], page: RefPage): { items: T[]; page_token?: string } {
    const sorted = [...all].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const after = decodePageToken(page.page_token, isString);
    const rest = after === undefined ? sorted : sorted.filter((x) => x.name > after);
    const limit = page.limit === undefined ? rest.length : Math.min(page.limit, this.maxListLimit);
    const items = rest.slice(0, limit);
    const more = items.length > 0 && rest.length > items.length;
    return { items, ...(more ? { page_token: encodePageToken(items[items.length - 1].name) } : {}) };
  }

  /** A ref's JSON file (`<table>/_refs/<kind>/<name>.json`), or undefined when it cannot be read. */
  private async refFile(location: string, kind: 'tags' | 'branches', name: string): Promise<Record<string, unknown> | undefined> {
    if (!safeRef(name)) return undefined;
    try {
      const parsed: unknown = JSON.parse((await this.storage.read(`${location}/_refs/${kind}/${name}.json`)).toString('utf8'));
      return parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : undefined;
    } catch {
      return undefined;
    }
  }
}

function isStringMap(v: unknown): v is Record<string, string> {
  return !!v && typeof v === 'object' && !Array.isArray(v) && Object.values(v).every((x) => typeof x === 'string');
}

function sortedByKey<T>(o: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
