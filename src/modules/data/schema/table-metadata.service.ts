import { Injectable } from '@nestjs/common';
import type * as arrow from 'apache-arrow';
import { Errors } from '../../../platform/http/errors';
import { LanceEngine } from '../../../engine/lance/lance-engine';
import { TenantContext } from '../../identity';
import { TablesService } from '../../catalog';
import { DataTables } from '../data-tables.service';
import { display } from '../dataplane.types';
import type { UpdateFieldMetadataResponse } from '../refs/table-refs.schemas';

export interface FieldMetadataChange {
  path: string;
  metadata: Record<string, string | null>;
  replace?: boolean;
}

/**
 * A Lance field path as segments: dot-separated, a segment in backticks may hold dots, and a doubled backtick
 * inside one is a backtick.
 */
export function fieldPathSegments(path: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quoted = false;
  for (let i = 0; i < path.length; i++) {
    const c = path[i];
    if (quoted) {
      if (c === '`' && path[i + 1] === '`') {
        cur += '`';
        i++;
      } else if (c === '`') quoted = false;
      else cur += c;
    } else if (c === '`') quoted = true;
    else if (c === '.') {
      out.push(cur);
      cur = '';
    } else cur += c;
  }
  out.push(cur);
  return out;
}

function fieldAt(fields: arrow.Field[], segments: string[]): arrow.Field | undefined {
  const [head, ...rest] = segments;
  const f = fields.find((x) => x.name === head);
  if (!f || rest.length === 0) return f;
  const children = (f.type as { children?: arrow.Field[] }).children ?? [];
  return fieldAt(children, rest);
}

/** Field (column) metadata, and the table's schema metadata (which the engine binding cannot change). */
@Injectable()
export class TableMetadataService {
  constructor(
    private readonly engine: LanceEngine,
    private readonly data: DataTables,
    private readonly tables: TablesService,
  ) {}

  /**
   * Merges (or, with `replace`, swaps) the metadata of each field; a `null` value removes that key. Answers the new
   * version and the resulting metadata of each updated field. An unknown path is a 404 (code 12).
   */
  async updateFieldMetadata(
    t: TenantContext,
    id: string[],
    updates: FieldMetadataChange[],
    branch?: string,
  ): Promise<UpdateFieldMetadataResponse> {
    const row = await this.data.written(t, id);
    return this.engine.withTable(
      row.location,
      async (table) => {
        const r = await this.data.commit(
          () =>
            table.updateFieldMetadata(
              updates.map((u) => ({ path: u.path, metadata: u.metadata, ...(u.replace !== undefined ? { replace: u.replace } : {}) })),
            ),
          (x) => ({ version: x.version, fields: updates.map((u) => u.path) }),
        );
        const schema = await table.schema();
        const fields: Record<string, Record<string, string>> = {};
        for (const u of updates) {
          const f = fieldAt(schema.fields, fieldPathSegments(u.path));
          if (f) fields[u.path] = Object.fromEntries(f.metadata ?? new Map());
        }
        return { version: r.version, fields };
      },
      { branch },
    );
  }

  /** The engine binding (@lancedb/lancedb) has no way to replace a table's schema metadata: 406 (code 0). */
  async updateSchemaMetadata(t: TenantContext, id: string[]): Promise<never> {
    await this.tables.get(t, id);
    throw Errors.unsupported(
      `updating the schema metadata of table '${display(id)}' is not supported: the Lance engine binding this gateway ` +
        'uses cannot replace schema metadata (field metadata can be changed with update_field_metadata)',
    );
  }
}
