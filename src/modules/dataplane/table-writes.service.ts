import { Inject, Injectable } from '@nestjs/common';
import { ApiError, ErrorCode, Errors } from '../../common/errors';
import type { CreateTableResponse, DeleteFromTableResponse, EnterpriseCreateTableResponse, InsertIntoTableResponse, MergeInsertIntoTableResponse, UpdateTableResponse } from '../../common/response-schemas';
import { APP_CONFIG, AppConfig } from '../../config/config';
import type { PendingWork } from '../reclaim/pending-locations.service';
import { TableRow } from '../tables/tables.repository';
import { TablesService } from '../tables/tables.service';
import { TableStorage } from '../../storage/table-storage.service';
import { TenantContext } from '../tenancy/tenant-context';
import { BufferedIpc, readWholeStream, streamInChunks } from './arrow-ipc';
import { LanceEngine } from '../../storage/lance-engine';
import { AuditService } from '../audit/audit.service';
import { assertEngineSql } from '../../storage/engine-sql';
import { DataTables } from './data-tables.service';
import { Body, CreateMode, Dialect, display, MergeOptions } from './dataplane.types';

/**
 * Writes: create (buffered or streamed), insert, merge_insert, update and delete. Every accepted write commits
 * exactly once, as its last step that can fail; what follows a commit never turns the answer into an error.
 */
@Injectable()
export class TableWritesService {
  private readonly limits: AppConfig['arrow'];

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly tables: TablesService,
    private readonly storage: TableStorage,
    private readonly engine: LanceEngine,
    private readonly data: DataTables,
    private readonly audit: AuditService,
  ) {
    this.limits = config.arrow;
  }

  // ---------------------------------------------------------------- create / insert / merge

  /**
   * Creates a table from an Arrow stream. A new table is streamed chunk by chunk into a fresh folder that nothing
   * refers to yet, and registered only once all of it is written: a bad, truncated or oversized body leaves nothing
   * registered and its folder removed.
   */
  async create(
    t: TenantContext,
    id: string[],
    mode: CreateMode,
    body: Body,
    dialect: Dialect,
    properties: Record<string, string> = {},
  ): Promise<CreateTableResponse> {
    const existing = await this.tables.lookup(t, id);
    if (existing && (await this.tables.hasData(existing))) {
      if (mode === 'create') throw dialect === 'remote' ? Errors.tableAlreadyExistsRemote(display(id)) : Errors.tableAlreadyExists(display(id));
      const location = this.storage.absolute(existing.location);
      if (mode === 'existok') {
        this.audit.nothingChanged();
        return { location, properties: { ...existing.properties } };
      }
      const data = await readWholeStream(body, this.limits.bufferedBodyBytes);
      const work = await this.tables.beginInPlace(t, existing);
      const version = await this.inPlace(work, () =>
        this.data.commit(
          () => this.engine.create(existing.location, data.file, 'overwrite'),
          (v) => ({ version: v, mode: 'overwrite', num_rows: data.rows }),
        ),
      );
      return { location, version, properties: { ...existing.properties } };
    }
    if (existing) {
      // Declared only: its first version is written at the declared location, in one commit.
      const data = await readWholeStream(body, this.limits.bufferedBodyBytes);
      const work = await this.tables.beginInPlace(t, existing);
      let version: number;
      try {
        version = await this.inPlace(work, () =>
          this.data.commit(() => this.engine.create(existing.location, data.file, 'create'), (v) => ({ version: v, num_rows: data.rows })),
        );
      } catch (err) {
        if (dialect === 'remote' && err instanceof ApiError && err.code === ErrorCode.TableAlreadyExists) {
          throw Errors.tableAlreadyExistsRemote(display(id));
        }
        throw err;
      }
      await this.markWrittenQuietly(existing);
      return { location: this.storage.absolute(existing.location), version, properties: { ...existing.properties } };
    }
    return this.createStreamed(t, id, body, dialect, properties);
  }

  /**
   * Enterprise `POST /v1/tables/{name}` and new tables of create_table: streamed, registered at the end. The fresh
   * folder is recorded as pending (in the lookup's statement) before anything is written, and the record is handed
   * to the table row when it is registered: a crash in between leaves a record the reclaimer finishes.
   */
  async createStreamed(t: TenantContext, id: string[], body: Body, dialect: Dialect, properties: Record<string, string> = {}): Promise<EnterpriseCreateTableResponse> {
    const location = this.tables.newLocation(t);
    // Refuse a taken name before reading the body; registering at the end settles races between creators.
    const { existing, work } = await this.tables.reserveNew(t, id, location);
    if (existing || !work) {
      throw dialect === 'remote' ? Errors.tableAlreadyExistsRemote(display(id)) : Errors.tableAlreadyExists(display(id));
    }
    try {
      const result = await streamInChunks(body, this.limits.streamBodyBytes, this.limits.ingestChunkBytes, async (file, _rows, i) => {
        work.assertHeld();
        if (i === 0) await this.engine.create(location, file, 'create');
        else await this.engine.append(location, file);
      });
      const version = await this.engine.withNative(location, (n) => n.version());
      // Registering is what makes the table exist: its audit record commits with the catalog row.
      await this.tables.registerWritten(t, id, work, properties, { version, num_rows: result.rows });
      return {
        name: id[id.length - 1],
        location: this.storage.absolute(location),
        version,
        num_rows: result.rows,
        properties,
      };
    } catch (err) {
      // Whatever was written goes; should that fail, the record stays for the reclaimer.
      await this.storage.remove(location).then(
        () => work.done(),
        () => work.abandon(),
      );
      if (dialect === 'remote' && err instanceof ApiError && err.code === ErrorCode.TableAlreadyExists) {
        throw Errors.tableAlreadyExistsRemote(display(id));
      }
      throw err;
    }
  }

  async insert(t: TenantContext, id: string[], mode: 'append' | 'overwrite', body: Body, branch?: string): Promise<InsertIntoTableResponse> {
    const { row, work } = await this.tables.getForWrite(t, id);
    const data = await this.bodyFor(work, body);
    return this.inPlace(work, async () => {
      if (!(await this.tables.hasData(row))) {
        this.data.assertNoBranch(id, branch);
        const version = await this.data.commit(() => this.engine.create(row.location, data.file, 'create'), (v) => ({ version: v, num_rows: data.rows }));
        await this.markWrittenQuietly(row);
        return { version, num_inserted_rows: data.rows };
      }
      if (data.batches === 0 && mode === 'append') {
        this.audit.nothingChanged();
        return { version: await this.engine.withNative(row.location, (n) => n.version(), branch), num_inserted_rows: 0 };
      }
      const version = await this.data.commit(() => this.engine.append(row.location, data.file, mode, branch), (v) => ({ version: v, mode, num_rows: data.rows }));
      return { version, num_inserted_rows: data.rows };
    });
  }

  async mergeInsert(t: TenantContext, id: string[], opts: MergeOptions, body: Body): Promise<MergeInsertIntoTableResponse> {
    assertEngineSql(opts.whenMatchedUpdateAllFilt, 'when_matched_update_all_filt');
    assertEngineSql(opts.whenNotMatchedBySourceDeleteFilt, 'when_not_matched_by_source_delete_filt');
    const { row, work } = await this.tables.getForWrite(t, id);
    const data = await this.bodyFor(work, body);
    return this.inPlace(work, () => this.merge(id, row, opts, data));
  }

  private async merge(id: string[], row: TableRow, opts: MergeOptions, data: BufferedIpc) {
    if (!(await this.tables.hasData(row))) {
      this.data.assertNoBranch(id, opts.branch);
      const version = await this.data.commit(() => this.engine.create(row.location, data.file, 'create'), (v) => ({ version: v, on: opts.on, num_rows: data.rows }));
      await this.markWrittenQuietly(row);
      return { version, num_inserted_rows: data.rows, num_updated_rows: 0, num_deleted_rows: 0 };
    }
    const merged = (r: { version: number; num_inserted_rows: number; num_updated_rows: number; num_deleted_rows: number }) => ({
      version: r.version,
      on: opts.on,
      num_inserted_rows: r.num_inserted_rows,
      num_updated_rows: r.num_updated_rows,
      num_deleted_rows: r.num_deleted_rows,
    });
    return this.data.commit(() => this.engine.withNative(row.location, async (n) => {
      let b = n.mergeInsert(opts.on);
      if (opts.whenMatchedUpdateAllFilt) b = b.whenMatchedUpdateAll(opts.whenMatchedUpdateAllFilt);
      else if (opts.whenMatchedUpdateAll) b = b.whenMatchedUpdateAll();
      if (opts.whenNotMatchedInsertAll) b = b.whenNotMatchedInsertAll();
      if (opts.whenNotMatchedBySourceDeleteFilt) b = b.whenNotMatchedBySourceDelete(opts.whenNotMatchedBySourceDeleteFilt);
      else if (opts.whenNotMatchedBySourceDelete) b = b.whenNotMatchedBySourceDelete();
      if (!opts.useIndex) b = b.useIndex(false);
      if (opts.timeoutMs) b.setTimeout(opts.timeoutMs);
      const r = await b.execute(data.file);
      return {
        version: r.version,
        num_inserted_rows: r.numInsertedRows,
        num_updated_rows: r.numUpdatedRows,
        num_deleted_rows: r.numDeletedRows,
        ...(typeof r.numAttempts === 'number' ? { num_attempts: r.numAttempts } : {}),
      };
    }, opts.branch), merged);
  }

  /** Reads a buffered body for a recorded in-place write; a bad body ends the work (nothing was written). */
  private async bodyFor(work: PendingWork, body: Body) {
    try {
      return await readWholeStream(body, this.limits.bufferedBodyBytes);
    } catch (err) {
      work.done();
      throw err;
    }
  }

  /**
   * Runs an in-place write recorded as pending. Success, or a refusal of the request (4xx other than a commit
   * conflict), ends the record; any other failure may have left data files in the table's folder before the
   * commit, so the record is left for the reclaimer, which removes the files no version references.
   */
  private async inPlace<T>(work: PendingWork, write: () => Promise<T>): Promise<T> {
    let result: T;
    try {
      work.assertHeld(); // the body may have been slow to arrive
      result = await write();
    } catch (err) {
      if (err instanceof ApiError && err.status < 500 && err.status !== 409) work.done();
      else work.abandon();
      throw err;
    }
    work.done();
    return result;
  }

  private async markWrittenQuietly(row: TableRow): Promise<void> {
    // After a commit nothing may fail the request: the flag is an optimisation, found again from storage later.
    await this.tables.markWritten(row).catch(() => undefined);
  }

  // ---------------------------------------------------------------- mutations

  async update(t: TenantContext, id: string[], updates: string[][], predicate?: string, branch?: string): Promise<UpdateTableResponse> {
    const seen = new Set<string>();
    const pairs = updates.map((u, i): [string, string] => {
      if (u.length !== 2) throw Errors.invalidInput(`updates[${i}] must be a [column, expression] pair, got ${u.length} elements`);
      if (!u[0]) throw Errors.invalidInput(`updates[${i}] has an empty column name`);
      if (seen.has(u[0])) throw Errors.invalidInput(`cannot update column '${u[0]}' more than once`);
      seen.add(u[0]);
      assertEngineSql(u[1], `updates[${i}] expression`);
      return [u[0], u[1]];
    });
    assertEngineSql(predicate, 'predicate');
    const row = await this.data.written(t, id);
    return this.data.commit(
      () =>
        this.engine.withNative(row.location, async (n) => {
          const r = await n.update(predicate?.trim() ? predicate : undefined, pairs);
          return { rows_updated: r.rowsUpdated, updated_rows: r.rowsUpdated, version: r.version };
        }, branch),
      (r) => ({ version: r.version, rows_updated: r.rows_updated }),
    );
  }

  async delete(t: TenantContext, id: string[], predicate: string, branch?: string): Promise<DeleteFromTableResponse> {
    if (!predicate.trim()) throw Errors.invalidInput('delete requires a non-empty predicate');
    assertEngineSql(predicate, 'predicate');
    const row = await this.data.written(t, id);
    return this.data.commit(
      () =>
        this.engine.withNative(row.location, async (n) => {
          const r = await n.delete(predicate);
          return { num_deleted_rows: r.numDeletedRows, version: r.version };
        }, branch),
      (r) => ({ version: r.version, num_deleted_rows: r.num_deleted_rows }),
    );
  }
}
