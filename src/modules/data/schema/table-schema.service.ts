import { Inject, Injectable } from '@nestjs/common';
import type * as lancedb from '@lancedb/lancedb';
import { Errors } from '../../../platform/http/errors';
import { decodePageToken, encodePageToken } from '../../../platform/http/pagination';
import type { DescribeTableVersionResponse, ListTableVersionsResponse } from '../../catalog';
import { APP_CONFIG, AppConfig } from '../../../platform/config/config';
import { TenantContext } from '../../identity';
import { JsonDataType, parseJsonDataType } from '../../../engine/arrow/arrow-json-schema';
import { LanceEngine, TableRef } from '../../../engine/lance/lance-engine';
import { assertEngineSql } from '../../../engine/lance/engine-sql';
import { ManagedVersionsService, VersionListing } from '../../catalog';
import { DataTables } from '../data-tables.service';
import { display } from '../dataplane.types';
import type { VersionResponse } from './table-schema.schemas';

/** Versions (list, restore) and schema evolution (add, alter and drop columns). */
@Injectable()
export class TableSchemaService {
  private readonly maxListLimit: number;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly engine: LanceEngine,
    private readonly data: DataTables,
    private readonly managed: ManagedVersionsService,
  ) {
    this.maxListLimit = config.listMaxLimit;
  }

  // ---------------------------------------------------------------- versions and schema evolution

  /**
   * The versions of a table (of a branch), oldest first or, with `descending`, newest first. All of them unless a
   * `limit` is given (the official remote client reads one page only); `page_token` continues after the last one.
   */
  async listVersions(t: TenantContext, id: string[], q: VersionListing): Promise<ListTableVersionsResponse> {
    // Catalog-managed versions: the catalog's word (an empty list for a table with none yet), not storage's.
    if (await this.managed.isManaged(t)) return this.managed.list(t, id, q);
    const row = await this.data.written(t, id);
    const all = await this.engine.versions(row.location, q.branch);
    if (q.descending) all.reverse();
    const after = decodePageToken(q.page_token, (v): v is number => Number.isInteger(v));
    const rest = after === undefined ? all : all.filter((v) => (q.descending ? v.version < after : v.version > after));
    const limit = q.limit === undefined ? rest.length : Math.min(q.limit, this.maxListLimit);
    const versions = rest.slice(0, limit);
    const more = versions.length > 0 && rest.length > versions.length;
    return { versions, ...(more ? { page_token: encodePageToken(versions[versions.length - 1].version) } : {}) };
  }

  /** One version of a table (of a branch): `version`, or the latest when absent; 404 (code 11) when it has no such version. */
  async describeVersion(t: TenantContext, id: string[], version?: number, branch?: string): Promise<DescribeTableVersionResponse> {
    if (await this.managed.isManaged(t)) return this.managed.describe(t, id, version, branch);
    const row = await this.data.written(t, id);
    const all = await this.engine.versions(row.location, branch);
    const found = version === undefined ? all[all.length - 1] : all.find((v) => v.version === version);
    if (!found) throw Errors.tableVersionNotFound(`version ${version ?? '(latest)'} of table '${display(id)}' not found`);
    return { version: found };
  }

  async restore(t: TenantContext, id: string[], version: number | undefined, branch?: string): Promise<VersionResponse> {
    if (version === undefined) throw Errors.invalidInput('restore requires a version');
    return this.change(t, id, { version, branch }, async (table) => {
      await table.restore();
      return { version: await table.version() };
    });
  }

  async addColumns(
    t: TenantContext,
    id: string[],
    columns: Array<{ name: string; expression?: string; computed?: string }>,
    branch?: string,
  ): Promise<VersionResponse> {
    columns.forEach((c, i) =>
      c.computed !== undefined
        ? assertEngineSql(c.computed, `new_columns[${i}].computed`)
        : assertEngineSql(c.expression ?? '', `new_columns[${i}].expression`),
    );
    // Computed columns are declared (added empty, their SQL kept in the field metadata) and filled by backfill_column.
    const computed = columns.every((c) => c.computed !== undefined);
    const sql = columns.map((c) => ({ name: c.name, valueSql: (c.computed ?? c.expression)! }));
    return this.change(t, id, { branch }, (table) => table.addColumns(computed ? { computed: sql } : sql), {
      columns: columns.map((c) => c.name),
    });
  }

  async alterColumns(
    t: TenantContext,
    id: string[],
    alterations: Array<{ path: string; rename?: string; nullable?: boolean; data_type?: { type: string } | null }>,
    branch?: string,
  ): Promise<VersionResponse> {
    const mapped = alterations.map((a) => {
      if (a.rename === undefined && a.nullable === undefined && !a.data_type) {
        throw Errors.invalidInput(`alteration of '${a.path}' changes nothing`);
      }
      return {
        path: a.path,
        ...(a.rename !== undefined ? { rename: a.rename } : {}),
        ...(a.nullable !== undefined ? { nullable: a.nullable } : {}),
        // Either spelling of the type (the remote client's `float`, a namespace client's `float32`).
        ...(a.data_type ? { dataType: parseJsonDataType(a.data_type as JsonDataType) } : {}),
      };
    });
    return this.change(t, id, { branch }, (table) => table.alterColumns(mapped), { columns: mapped.map((a) => a.path) });
  }

  async dropColumns(t: TenantContext, id: string[], columns: string[], branch?: string): Promise<VersionResponse> {
    return this.change(t, id, { branch }, (table) => table.dropColumns(columns));
  }

  /** One change of the table at `at`, committed by the engine with its audit record (`details` beside the version). */
  private async change(
    t: TenantContext,
    id: string[],
    at: TableRef,
    apply: (table: lancedb.Table) => Promise<{ version: number }>,
    details: Record<string, unknown> = {},
  ): Promise<VersionResponse> {
    const row = await this.data.written(t, id);
    return this.engine.withTable(
      row.location,
      async (table) => {
        const r = await this.data.commit(
          () => apply(table),
          (x) => ({ version: x.version, ...details }),
        );
        return { version: r.version };
      },
      at,
    );
  }
}
