import { Inject, Injectable, Logger } from '@nestjs/common';
import { ApiError, ErrorCode, Errors } from '../../../platform/http/errors';
import type {
  CreateTableResponse,
  DeleteFromTableResponse,
  EnterpriseCreateTableResponse,
  InsertIntoTableResponse,
  MergeInsertIntoTableResponse,
  UpdateTableResponse,
} from './table-writes.schemas';
import { APP_CONFIG, AppConfig } from '../../../platform/config/config';
import type { PendingWork } from '../../../platform/cluster/pending-locations.service';
import { TableRow, RegistrationOutcomeUnknown, TablesService, TableWriteLifecycle } from '../../catalog';
import { TableStorage } from '../../../engine/storage/table-storage.service';
import { requireOn, TenantContext } from '../../identity';
import { BufferedIpc, streamInChunks } from '../../../engine/arrow/arrow-ipc';
import { LanceEngine } from '../../../engine/lance/lance-engine';
import { AuditService } from '../../audit';
import { assertEngineSql } from '../../../engine/lance/engine-sql';
import { DataTables } from '../data-tables.service';
import { Body, CreateMode, Dialect, display, MergeOptions } from '../dataplane.types';
import { metered } from './write-budget';
import { counting, inPlace, Loaded, markWrittenQuietly, WriteBodies } from './write-bodies';
import { UsageMeter, QuotaService } from '../../metering';

/** create()'s arguments (createOrKeep takes the same). */
type CreateArgs = [t: TenantContext, id: string[], mode: CreateMode, body: Body, dialect: Dialect, properties?: Record<string, string>];

/** A taken name: the remote dialect's error or the spec's. */
const alreadyExists = (id: string[], dialect: Dialect) =>
  dialect === 'remote' ? Errors.tableAlreadyExistsRemote(display(id)) : Errors.tableAlreadyExists(display(id));

/** A failure of a create as the dialect reports it (the remote dialect has its own "already exists"). */
const remoteExists = (err: unknown, id: string[], dialect: Dialect) =>
  dialect === 'remote' && err instanceof ApiError && err.code === ErrorCode.TableAlreadyExists ? alreadyExists(id, 'remote') : err;

/**
 * Writes: create (buffered or streamed), insert, merge_insert, update and delete. Every accepted write commits
 * exactly once, as its last step that can fail; what follows a commit never turns the answer into an error.
 *
 * Memory: every write with an Arrow body reserves what it holds from the process-wide WriteBudget before it holds
 * it (waiting its turn, then 503 "Slow down" with Retry-After, with nothing written). Writes that commit once
 * (insert, merge_insert, overwrite, the first write of a declared table) spill their body to a temporary file
 * while it arrives, holding one message at a time, and load it only for the commit (the engine's native write takes
 * one in-memory IPC file); the file is removed when the request ends, whatever happens. A streamed create holds
 * about two chunks.
 */
@Injectable()
export class TableWritesService {
  private readonly log = new Logger('TableWrites');
  private readonly limits: AppConfig['arrow'];

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly tables: TablesService,
    private readonly lifecycle: TableWriteLifecycle,
    private readonly storage: TableStorage,
    private readonly engine: LanceEngine,
    private readonly data: DataTables,
    private readonly audit: AuditService,
    private readonly bodies: WriteBodies,
    private readonly meter: UsageMeter,
    private readonly quotas: QuotaService,
  ) {
    this.limits = config.arrow;
  }

  // ---------------------------------------------------------------- create / insert / merge

  /**
   * Creates a table from an Arrow stream. A new table is streamed chunk by chunk into a fresh folder that nothing
   * refers to yet, and registered only once all of it is written: a bad, truncated or oversized body leaves nothing
   * registered and its folder removed.
   */
  async create(...args: CreateArgs): Promise<CreateTableResponse> {
    const [t, id, , , dialect] = args;
    const out = await this.createOrKeep(...args);
    // Spec clients (namespace mode) may go on to read and write the table data themselves: vended options with it.
    // The table is created by now, so a failure to vend leaves them out rather than failing the create.
    if (dialect === 'spec' && this.storage.profiles().some((p) => p.vend && (p.clientOptions || p.sts))) {
      const storageOptions = await this.tables
        .lookup(t, id)
        .then((row) => (row ? this.tables.storageOptions(t, id, row.location, true, true) : undefined))
        .catch((err: unknown) => {
          this.log.warn(`created ${display(id)}, but could not vend its storage options: ${(err as Error).message}`);
          return undefined;
        });
      if (storageOptions) return { ...out, storage_options: storageOptions };
    }
    return out;
  }

  private async createOrKeep(...[t, id, mode, body, dialect, properties = {}]: CreateArgs): Promise<CreateTableResponse> {
    const existing = await this.tables.lookup(t, id);
    if (existing && (await this.tables.hasData(existing))) {
      if (mode === 'create') throw alreadyExists(id, dialect);
      const location = this.storage.uri(existing.location);
      if (mode === 'existok') {
        this.audit.nothingChanged();
        return { location, properties: { ...existing.properties } };
      }
      // Overwrite replaces every row: the caller needs `manage` on the table, not only `create` where it is.
      requireOn(t, 'manage', 'table', id);
      return this.bodies.spooled(body, async (load) => {
        const data = await this.withinQuota(t, await load());
        const work = await this.lifecycle.beginInPlace(t, existing);
        const version = await inPlace(work, () =>
          this.data.commit(
            () => this.engine.create(existing.location, data.file, 'overwrite'),
            (v) => ({ version: v, mode: 'overwrite', num_rows: data.rows }),
          ),
        );
        this.meterWrite(t, existing.id, data);
        return { location, version, properties: { ...existing.properties } };
      });
    }
    if (existing) {
      // Declared only: its first version is written at the declared location, in one commit.
      return this.bodies.spooled(body, async (load) => {
        const data = await this.withinQuota(t, await load());
        const work = await this.lifecycle.beginInPlace(t, existing);
        const version = await inPlace(work, () => this.createFirst(existing, data)).catch((err) => {
          throw remoteExists(err, id, dialect);
        });
        this.meterWrite(t, existing.id, data);
        return { location: this.storage.uri(existing.location), version, properties: { ...existing.properties } };
      });
    }
    return this.createStreamed(t, id, body, dialect, properties);
  }

  /**
   * Enterprise `POST /v1/tables/{name}` and new tables of create_table: streamed, registered at the end. The fresh
   * folder is recorded as pending (in the lookup's statement) before anything is written, and the record is handed
   * to the table row when it is registered: a crash in between leaves a record the reclaimer finishes.
   */
  async createStreamed(
    t: TenantContext,
    id: string[],
    raw: Body,
    dialect: Dialect,
    properties: Record<string, string> = {},
  ): Promise<EnterpriseCreateTableResponse> {
    const { body, bytes } = counting(raw);
    // About two chunks are held at once (the one being read, the one being written): reserved up front by
    // Content-Length, else as the bytes arrive, up to that.
    const cap = 2 * this.limits.ingestChunkBytes;
    const reservation = await this.bodies.admit(body, Math.min(body.contentLength ?? 0, cap));
    const source = body.contentLength === undefined ? metered(body, (n) => reservation.grow(Math.min(n, cap - reservation.bytes))) : body;
    try {
      const created = await this.createStreamedAdmitted(t, id, source, dialect, properties, bytes, raw.beforeCommit);
      this.meter.ingested(t.database.id, created.num_rows, bytes());
      return created;
    } catch (err) {
      await this.bodies.settleRefused(body, err);
      throw err;
    } finally {
      reservation.release();
    }
  }

  private async createStreamedAdmitted(
    t: TenantContext,
    id: string[],
    body: Body,
    dialect: Dialect,
    properties: Record<string, string>,
    bytes: () => number,
    beforeCommit?: () => Promise<void>,
  ): Promise<EnterpriseCreateTableResponse> {
    // Quotas before anything is written: room for a table, and the storage the declared body would add.
    await this.quotas.assertTableRoom(t);
    const checkStorage = await this.quotas.storageCheck(t);
    checkStorage(body.contentLength ?? 0);
    const location = await this.lifecycle.newLocation(t);
    // Refuse a taken name before reading the body; registering at the end settles races between creators.
    const { existing, work } = await this.lifecycle.reserveNew(t, id, location);
    if (existing || !work) throw alreadyExists(id, dialect);
    try {
      let rows = 0;
      let version: number | undefined;
      // One table handle for every chunk: the first creates the table, the others append to it.
      const writer = await this.engine.streamWriter(location);
      let result: Awaited<ReturnType<typeof streamInChunks>>;
      try {
        result = await streamInChunks(body, this.limits.streamBodyBytes, this.limits.ingestChunkBytes, async (file, chunkRows, i) => {
          work.assertHeld();
          // A body past a quota stops before its chunk is written (what was written goes with the folder, below).
          rows += chunkRows;
          this.quotas.assertRows(t, rows);
          if (i > 0) checkStorage(bytes());
          version = await writer.write(file);
        });
      } catch (err) {
        await writer.close().catch(() => undefined);
        throw err;
      }
      await writer.close();
      // The last chunk's commit (chunks commit one after another, and an empty body is one chunk); read as a fallback.
      if (version === undefined) version = await this.engine.latestVersion(location);
      // Registering is what makes the table exist (the chunks went to a folder nothing refers to yet): the request's
      // exactly-once check comes first, then the row, with its audit record.
      await beforeCommit?.();
      await this.lifecycle.registerWritten(t, id, work, properties, { version, num_rows: result.rows });
      return {
        name: id[id.length - 1],
        location: this.storage.uri(location),
        version,
        num_rows: result.rows,
        properties,
      };
    } catch (err) {
      // Whatever was written goes; should that fail, the record stays for the reclaimer. A registration whose
      // outcome is unknown left its record to the reclaimer already (it removes the folder only if unregistered).
      if (!(err instanceof RegistrationOutcomeUnknown)) {
        await this.storage.remove(location).then(
          () => work.done(),
          () => work.abandon(),
        );
      }
      throw remoteExists(err, id, dialect);
    }
  }

  async insert(
    t: TenantContext,
    id: string[],
    mode: 'append' | 'overwrite',
    body: Body,
    branch?: string,
  ): Promise<InsertIntoTableResponse> {
    return this.bodies.spooled(body, async (load) => {
      // A keyed insert's claim goes in the reservation's statement (docs/idempotency.md).
      const { row, work } = await this.lifecycle.getForWrite(t, id, body.claim);
      const data = await this.bodyFor(t, work, load);
      const out = await inPlace(work, async () => {
        if (!(await this.tables.hasData(row))) {
          this.data.assertNoBranch(id, branch);
          return { version: await this.createFirst(row, data), num_inserted_rows: data.rows };
        }
        if (data.batches === 0 && mode === 'append') {
          this.audit.nothingChanged();
          return { version: await this.engine.latestVersion(row.location, branch), num_inserted_rows: 0 };
        }
        const version = await this.data.commit(
          () => this.engine.append(row.location, data.file, mode, branch),
          (v) => ({ version: v, mode, num_rows: data.rows }),
        );
        return { version, num_inserted_rows: data.rows };
      });
      this.meterWrite(t, row.id, data);
      return out;
    });
  }

  async mergeInsert(t: TenantContext, id: string[], opts: MergeOptions, body: Body): Promise<MergeInsertIntoTableResponse> {
    assertEngineSql(opts.whenMatchedUpdateAllFilt, 'when_matched_update_all_filt');
    assertEngineSql(opts.whenNotMatchedBySourceDeleteFilt, 'when_not_matched_by_source_delete_filt');
    return this.bodies.spooled(body, async (load) => {
      const { row, work } = await this.lifecycle.getForWrite(t, id, body.claim);
      const data = await this.bodyFor(t, work, load);
      const out = await inPlace(work, () => this.merge(id, row, opts, data));
      this.meterWrite(t, row.id, data);
      return out;
    });
  }

  private async merge(id: string[], row: TableRow, opts: MergeOptions, data: BufferedIpc) {
    if (!(await this.tables.hasData(row))) {
      this.data.assertNoBranch(id, opts.branch);
      const version = await this.createFirst(row, data, { on: opts.on });
      return { version, num_inserted_rows: data.rows, num_updated_rows: 0, num_deleted_rows: 0 };
    }
    const merged = (r: { version: number; num_inserted_rows: number; num_updated_rows: number; num_deleted_rows: number }) => ({
      version: r.version,
      on: opts.on,
      num_inserted_rows: r.num_inserted_rows,
      num_updated_rows: r.num_updated_rows,
      num_deleted_rows: r.num_deleted_rows,
    });
    return this.data.commit(
      () =>
        this.engine.withNative(
          row.location,
          async (n) => {
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
            // Its new and rewritten rows are about its body (what the storage estimate counts, docs/usage-and-quotas.md).
          },
          opts.branch,
          { bodyBytes: data.file.length },
        ),
      merged,
    );
  }

  /** The first version of a declared table, from its body (the audit record's details with `extra`), then marked written. */
  private async createFirst(row: TableRow, data: BufferedIpc, extra: Record<string, unknown> = {}): Promise<number> {
    const version = await this.data.commit(
      () => this.engine.create(row.location, data.file, 'create'),
      (v) => ({ version: v, ...extra, num_rows: data.rows }),
    );
    await markWrittenQuietly(this.lifecycle, row);
    return version;
  }

  /**
   * Reads a buffered body for a recorded in-place write and checks it against the quotas; a bad body or a refusal
   * ends the work (nothing was written).
   */
  private async bodyFor(t: TenantContext, work: PendingWork, load: () => Promise<Loaded>): Promise<Loaded> {
    try {
      return await this.withinQuota(t, await load());
    } catch (err) {
      work.done();
      throw err;
    }
  }

  /** A loaded body within the database's quotas (rows per write, storage), else 403 code 15 before any commit. */
  private async withinQuota(t: TenantContext, data: Loaded): Promise<Loaded> {
    this.quotas.assertRows(t, data.rows);
    await this.quotas.assertStorage(t, data.bodyBytes);
    return data;
  }

  /** A committed write: its rows and body bytes counted, its table due for a size re-read. */
  private meterWrite(t: TenantContext, tableId: string, data: Loaded): void {
    this.meter.ingested(t.database.id, data.rows, data.bodyBytes);
    this.meter.written(tableId);
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
        this.engine.withNative(
          row.location,
          async (n) => {
            const r = await n.update(predicate?.trim() ? predicate : undefined, pairs);
            return { rows_updated: r.rowsUpdated, updated_rows: r.rowsUpdated, version: r.version };
          },
          branch,
        ),
      (r) => ({ version: r.version, rows_updated: r.rows_updated }),
    );
  }

  async delete(t: TenantContext, id: string[], predicate: string, branch?: string): Promise<DeleteFromTableResponse> {
    if (!predicate.trim()) throw Errors.invalidInput('delete requires a non-empty predicate');
    assertEngineSql(predicate, 'predicate');
    const row = await this.data.written(t, id);
    return this.data.commit(
      () =>
        this.engine.withNative(
          row.location,
          async (n) => {
            const r = await n.delete(predicate);
            return { num_deleted_rows: r.numDeletedRows, version: r.version };
          },
          branch,
        ),
      (r) => ({ version: r.version, num_deleted_rows: r.num_deleted_rows }),
    );
  }
}
