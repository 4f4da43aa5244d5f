import { Injectable } from '@nestjs/common';
import * as arrow from 'apache-arrow';
import { Errors } from '../../common/errors';
import type { ListTableVersionsResponse, VersionResponse } from '../../common/response-schemas';
import { TenantContext } from '../tenancy/tenant-context';
import { LanceEngine } from '../../storage/lance-engine';
import { assertEngineSql } from '../../storage/engine-sql';
import { DataTables } from './data-tables.service';

/** Versions (list, restore) and schema evolution (add, alter and drop columns). */
@Injectable()
export class TableSchemaService {
  constructor(
    private readonly engine: LanceEngine,
    private readonly data: DataTables,
  ) {}

  // ---------------------------------------------------------------- versions and schema evolution

  async listVersions(t: TenantContext, id: string[]): Promise<ListTableVersionsResponse> {
    const row = await this.data.written(t, id);
    return this.engine.withTable(row.location, async (table) => ({
      versions: (await table.listVersions()).map((v) => ({
        version: v.version,
        timestamp: v.timestamp.toISOString(),
        metadata: v.metadata ?? {},
      })),
    }));
  }

  async restore(t: TenantContext, id: string[], version: number | undefined): Promise<VersionResponse> {
    if (version === undefined) throw Errors.invalidInput('restore requires a version');
    const row = await this.data.written(t, id);
    return this.engine.withTable(
      row.location,
      async (table) => ({
        version: await this.data.commit(
          async () => {
            await table.restore();
            return table.version();
          },
          (v) => ({ version: v }),
        ),
      }),
      version,
    );
  }

  async addColumns(t: TenantContext, id: string[], columns: Array<{ name: string; expression: string }>): Promise<VersionResponse> {
    columns.forEach((c, i) => assertEngineSql(c.expression, `new_columns[${i}].expression`));
    const row = await this.data.written(t, id);
    return this.engine.withTable(row.location, async (table) => {
      const r = await this.data.commit(
        () => table.addColumns(columns.map((c) => ({ name: c.name, valueSql: c.expression }))),
        (x) => ({ version: x.version, columns: columns.map((c) => c.name) }),
      );
      return { version: r.version };
    });
  }

  async alterColumns(
    t: TenantContext,
    id: string[],
    alterations: Array<{ path: string; rename?: string; nullable?: boolean; data_type?: { type: string } | null }>,
  ): Promise<VersionResponse> {
    const mapped = alterations.map((a) => {
      if (a.rename === undefined && a.nullable === undefined && !a.data_type) {
        throw Errors.invalidInput(`alteration of '${a.path}' changes nothing`);
      }
      return {
        path: a.path,
        ...(a.rename !== undefined ? { rename: a.rename } : {}),
        ...(a.nullable !== undefined ? { nullable: a.nullable } : {}),
        ...(a.data_type ? { dataType: this.arrowType(a.data_type.type) } : {}),
      };
    });
    const row = await this.data.written(t, id);
    return this.engine.withTable(row.location, async (table) => ({
      version: (await this.data.commit(() => table.alterColumns(mapped), (x) => ({ version: x.version, columns: mapped.map((a) => a.path) }))).version,
    }));
  }

  private arrowType(name: string): arrow.DataType {
    const types: Record<string, () => arrow.DataType> = {
      int8: () => new arrow.Int8(),
      int16: () => new arrow.Int16(),
      int32: () => new arrow.Int32(),
      int64: () => new arrow.Int64(),
      uint8: () => new arrow.Uint8(),
      uint16: () => new arrow.Uint16(),
      uint32: () => new arrow.Uint32(),
      uint64: () => new arrow.Uint64(),
      halffloat: () => new arrow.Float16(),
      float: () => new arrow.Float32(),
      double: () => new arrow.Float64(),
      string: () => new arrow.Utf8(),
      large_string: () => new arrow.LargeUtf8(),
      binary: () => new arrow.Binary(),
      large_binary: () => new arrow.LargeBinary(),
      bool: () => new arrow.Bool(),
    };
    const make = types[name];
    if (!make) throw Errors.invalidInput(`unsupported data_type '${name}' in alter_columns`);
    return make();
  }

  async dropColumns(t: TenantContext, id: string[], columns: string[]): Promise<VersionResponse> {
    const row = await this.data.written(t, id);
    return this.engine.withTable(row.location, async (table) => ({
      version: (await this.data.commit(() => table.dropColumns(columns), (x) => ({ version: x.version }))).version,
    }));
  }
}
