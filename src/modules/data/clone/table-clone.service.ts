import { Inject, Injectable } from '@nestjs/common';
import { Field, Schema } from 'apache-arrow';
import { ApiError, Errors } from '../../../platform/http/errors';
import { APP_CONFIG, AppConfig } from '../../../platform/config/config';
import { LanceEngine } from '../../../engine/lance/lance-engine';
import { TableStorage } from '../../../engine/storage/table-storage.service';
import { TableRow, RegistrationOutcomeUnknown, TablesService, TableWriteLifecycle } from '../../catalog';
import { TenantContext } from '../../identity';
import { decodeSchema, IpcMessage } from '../../../engine/arrow/arrow-ipc-message';
import { ipcFile } from '../../../engine/arrow/arrow-ipc-file';
import { engineBatches } from '../../../engine/arrow/engine-batches';
import { display } from '../dataplane.types';
import type { CloneTableResponse } from './table-clone.schemas';
import { isComputed } from '../jobs/table-jobs.service';
import { WriteBudget } from '../writes/write-budget';

export interface CloneRequest {
  source_location: string;
  source_version?: number;
  source_tag?: string;
  is_shallow: boolean;
}

/**
 * CloneTable (the official remote client's `cloneTable`): a new table made from a table of the caller's own
 * catalog, at its latest version, a version or a tag. It is written into a fresh folder nothing refers to yet and
 * registered only once complete, as a created table is (a failure leaves nothing registered and the folder removed).
 *
 * - shallow (the default): local storage only (on object stores the engine binding cannot open the source with the
 *   store's options: 406 code 0). The engine's clone, a manifest of its own that refers to the source's data files,
 *   which stay in the source's folder: the catalog records the source (tables.clone_source_id), and the source cannot
 *   be dropped or deregistered while a clone refers to it (409 code 19). Deep-clone a table whose source must go.
 * - deep: the engine binding has no deep clone, so the source's rows at that version are copied into the new table,
 *   ARROW_INGEST_CHUNK_BYTES at a time (one version per chunk; about two chunks held, reserved from the write budget).
 *   Indexes, tags and history are not copied. The engine refuses values written into a computed column (and edits
 *   of its declaration), so a computed column is declared again on the clone with the source's SQL, after the other
 *   columns, and refreshed there: its values are the source's wherever the source had filled them (rows the source
 *   had not filled yet, or whose inputs changed since, are filled by that refresh).
 */
@Injectable()
export class TableCloneService {
  private readonly chunkBytes: number;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly tables: TablesService,
    private readonly lifecycle: TableWriteLifecycle,
    private readonly storage: TableStorage,
    private readonly engine: LanceEngine,
    private readonly budget: WriteBudget,
  ) {
    this.chunkBytes = config.arrow.ingestChunkBytes;
  }

  async clone(t: TenantContext, id: string[], req: CloneRequest, delimiter: string): Promise<CloneTableResponse> {
    if (req.source_version !== undefined && req.source_tag !== undefined) {
      throw Errors.invalidInput('give source_version or source_tag, not both');
    }
    const source = await this.tables.findCloneSource(t, req.source_location, delimiter);
    if (!(await this.tables.hasData(source))) {
      throw Errors.invalidInput(`table '${source.name}' has no data yet: there is nothing to clone`);
    }
    // The version or tag must exist before anything is written (and are answered with their own codes: 11, 8).
    if (req.source_tag !== undefined) {
      const tag = req.source_tag;
      await this.engine.read(source.location, async (table) => (await table.tags()).getVersion(tag));
    } else if (req.source_version !== undefined) {
      await this.engine.read(source.location, (table) => table.version(), { version: req.source_version });
    }

    const location = await this.lifecycle.newLocation(t);
    const { existing, work } = await this.lifecycle.reserveNew(t, id, location);
    if (existing || !work) throw Errors.tableAlreadyExists(display(id));
    if (req.is_shallow && this.storage.profileOf(source.location).scheme !== 'file') {
      // The engine binding opens the source of a shallow clone without the store's options (endpoint, region,
      // credentials), so it cannot reach it; a deep clone reads it through the gateway's own handle.
      work.done();
      throw Errors.unsupported(
        "a shallow clone is not supported on object-store storage: the Lance engine binding cannot pass the store's " +
          "options to the clone's source; clone with is_shallow=false (a deep clone copies the rows)",
      );
    }
    try {
      const copied = req.is_shallow
        ? {
            version: await this.engine.shallowClone(source.location, location, { version: req.source_version, tag: req.source_tag }),
            rows: undefined,
          }
        : await this.deepCopy(source, location, req);
      work.assertHeld();
      await this.lifecycle.registerWritten(
        t,
        id,
        work,
        {},
        {
          version: copied.version,
          source_table: [...(source.namespacePath ? [source.namespacePath] : []), source.name].join('/'),
          source_version: req.source_version ?? null,
          source_tag: req.source_tag ?? null,
          is_shallow: req.is_shallow,
          ...(copied.rows !== undefined ? { num_rows: copied.rows } : {}),
        },
        req.is_shallow ? source.id : undefined,
      );
      return { location: this.storage.uri(location), version: copied.version, properties: {} };
    } catch (err) {
      // Whatever was written goes; should that fail, the record stays for the reclaimer. A registration whose
      // outcome is unknown left its record to the reclaimer already (it removes the folder only if unregistered).
      if (!(err instanceof RegistrationOutcomeUnknown)) {
        await this.storage.remove(location).then(
          () => work.done(),
          () => work.abandon(),
        );
      }
      throw err;
    }
  }

  /**
   * Copies the source's rows (at the version or tag asked for) into a new table at `target`, chunk by chunk: the
   * engine hands out each batch as IPC bytes, which are regrouped into IPC files of about ARROW_INGEST_CHUNK_BYTES
   * without decoding them. A batch stream carrying dictionaries is written on its own (its dictionaries with it).
   */
  private async deepCopy(source: TableRow, target: string, req: CloneRequest): Promise<{ version: number; rows: number }> {
    const reservation = await this.budget.reserve(2 * this.chunkBytes);
    const h = await this.engine.open(source.location, req.source_version !== undefined ? { version: req.source_version } : undefined);
    try {
      if (req.source_tag !== undefined) await h.table.checkout(req.source_tag);
      const fields = (await h.table.schema()).fields;
      const computed = fields.filter(isComputed);
      for (const f of computed) {
        if (!f.metadata.get('computed_column.expression') || (f.metadata.get('computed_column.kind') ?? 'sql') !== 'sql') {
          throw Errors.unsupported(`a deep clone cannot copy computed column '${f.name}': it is not defined by SQL`);
        }
      }
      let schemaMsg: IpcMessage | undefined;
      let schema: Schema | undefined;
      let pending: IpcMessage[] = [];
      let pendingBytes = 0;
      let written = 0;
      let version: number | undefined;
      let rows = 0;
      const flush = async (dictionaries: IpcMessage[] = []) => {
        if (!schemaMsg || !schema) return;
        if (written > 0 && pending.length === 0) return;
        const file = ipcFile(schema, schemaMsg, dictionaries, pending);
        version = written === 0 ? await this.engine.create(target, file, 'create') : await this.engine.append(target, file);
        written++;
        pending = [];
        pendingBytes = 0;
      };
      const columns = computed.length > 0 ? fields.filter((f) => !isComputed(f)).map((f) => f.name) : undefined;
      for await (const messages of engineBatches(h.table, columns)) {
        const head = messages.find((m) => m.kind === 'schema');
        if (!schemaMsg && head) {
          schemaMsg = head;
          schema = decodeSchema(head);
        }
        const dictionaries = messages.filter((m) => m.kind === 'dictionary');
        const batches = messages.filter((m) => m.kind === 'batch');
        for (const m of batches) rows += m.rows;
        if (dictionaries.length > 0) {
          await flush();
          pending = batches;
          await flush(dictionaries);
          continue;
        }
        pending.push(...batches);
        pendingBytes += batches.reduce((n, m) => n + m.framedMeta.length + m.bodyLength, 0);
        if (pendingBytes >= this.chunkBytes) await flush();
      }
      await flush();
      if (computed.length > 0) version = await this.declareComputed(target, computed);
      return { version: version ?? (await this.engine.latestVersion(target)), rows };
    } catch (err) {
      throw err instanceof ApiError ? err : this.engine.translate(err);
    } finally {
      h.close();
      reservation.release();
    }
  }

  /**
   * Declares the source's computed columns on the copy (with their SQL), fills them, and puts back the field metadata
   * of their own (a description, say; the engine's `computed_*` keys are its to write). Returns the last version.
   */
  private async declareComputed(target: string, computed: Field[]): Promise<number> {
    return this.engine.withTable(target, async (table) => {
      await table.addColumns({
        computed: computed.map((f) => ({ name: f.name, valueSql: f.metadata.get('computed_column.expression')! })),
      });
      for (const f of computed) await table.refreshColumn(f.name);
      const own = computed
        .map((f) => ({ path: f.name, metadata: Object.fromEntries([...f.metadata].filter(([k]) => !k.startsWith('computed_'))) }))
        .filter((u) => Object.keys(u.metadata).length > 0);
      if (own.length > 0) await table.updateFieldMetadata(own);
      return table.version();
    });
  }
}
