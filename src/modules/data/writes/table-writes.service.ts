import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import { Schema } from 'apache-arrow';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { ApiError, ErrorCode, Errors } from '../../../platform/http/errors';
import type { CreateTableResponse, DeleteFromTableResponse, EnterpriseCreateTableResponse, InsertIntoTableResponse, MergeInsertIntoTableResponse, UpdateTableResponse } from '../../catalog';
import { APP_CONFIG, AppConfig } from '../../../platform/config/config';
import { isUuid } from '../../../platform/http/validation/fields';
import type { PendingWork } from '../../../platform/cluster/pending-locations.service';
import { TableRow, RegistrationOutcomeUnknown, TablesService, TableWriteLifecycle } from '../../catalog';
import { TableStorage } from '../../../engine/storage/table-storage.service';
import { TenantContext } from '../../identity';
import { BufferedIpc, spillWholeStream, streamInChunks } from '../../../engine/arrow/arrow-ipc';
import { ipcFile } from '../../../engine/arrow/arrow-ipc-file';
import { decodeSchema, IpcMessage } from '../../../engine/arrow/arrow-ipc-message';
import { engineBatches } from '../../../engine/arrow/engine-batches';
import { branchOf, LanceEngine } from '../../../engine/lance/lance-engine';
import { AuditService } from '../../audit';
import { assertEngineSql } from '../../../engine/lance/engine-sql';
import { DataTables } from '../data-tables.service';
import { Body, CreateMode, Dialect, display, MergeOptions } from '../dataplane.types';
import { COMMIT_MEMORY_FACTOR, discard, metered, Reservation, WriteBudget } from './write-budget';
import { UsageMeter, QuotaService } from '../../metering';
import type { CarriedClaim } from '../../idempotency';

/** A buffered body as loaded for its commit, with the bytes that arrived for it (metered as ingested). */
type Loaded = BufferedIpc & { bodyBytes: number };

/** The body, counting the bytes that arrive (its length, `settled` and `beforeCommit` kept). */
function counting(body: Body): { body: Body; bytes: () => number } {
  let n = 0;
  const wrapped = Object.assign(metered(body, (k) => (n += k)), { contentLength: body.contentLength, settled: body.settled, beforeCommit: body.beforeCommit });
  return { body: wrapped, bytes: () => n };
}

/** Part ids the client mints (a UUID v4 each); anything else is never turned into a storage path. */
const SAFE_PART = /^[A-Za-z0-9_-]{1,64}$/;

function assertUploadId(uploadId: string): void {
  if (!isUuid(uploadId)) throw Errors.invalidInput('upload_id must be an id answered by multipart_write/create');
}

/** The four bytes of an upload id that say which branch the upload was created for ('' is main). */
const branchTag = (branch: string | undefined) =>
  createHash('sha256')
    .update(`lance-gateway upload branch\0${branchOf(branch) ?? ''}`)
    .digest()
    .subarray(0, 4);

/**
 * A new upload id (a UUID v4 in form, 90 random bits) whose last four bytes name the branch it is for: an upload
 * belongs to the branch it was created for, and nothing else has to be recorded for `complete` to know it.
 */
function newUploadId(branch: string | undefined): string {
  const b = randomBytes(16);
  branchTag(branch).copy(b, 12);
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

const uploadIsFor = (uploadId: string, branch: string | undefined) => Buffer.from(uploadId.replace(/-/g, ''), 'hex').subarray(12).equals(branchTag(branch));

/** A schema's fields, for comparing the schemas of staged parts. */
const schemaKey = (s: Schema) => s.fields.map((f) => `${f.name}:${String(f.type)}:${f.nullable}`).join(',');

/** Where the parts of an upload are staged: `<table>/_uploads/<upload_id>/`, on the table's own storage. */
const uploadFolder = (location: string, uploadId: string) => `${location}/_uploads/${uploadId}`;

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
    private readonly budget: WriteBudget,
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
  async create(
    t: TenantContext,
    id: string[],
    mode: CreateMode,
    body: Body,
    dialect: Dialect,
    properties: Record<string, string> = {},
  ): Promise<CreateTableResponse> {
    const out = await this.createOrKeep(t, id, mode, body, dialect, properties);
    // Spec clients (namespace mode) may go on to read and write the table data themselves: vended options with it.
    // The table is created by now, so a failure to vend leaves them out rather than failing the create.
    if (dialect === 'spec' && this.storage.profiles().some((p) => p.vend && (p.clientOptions || p.sts))) {
      const storageOptions = await this.tables
        .lookup(t, id)
        .then((row) => (row ? this.tables.storageOptions(t, row.location, true) : undefined))
        .catch((err: unknown) => {
          this.log.warn(`created ${display(id)}, but could not vend its storage options: ${(err as Error).message}`);
          return undefined;
        });
      if (storageOptions) return { ...out, storage_options: storageOptions };
    }
    return out;
  }

  private async createOrKeep(
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
      const location = this.storage.uri(existing.location);
      if (mode === 'existok') {
        this.audit.nothingChanged();
        return { location, properties: { ...existing.properties } };
      }
      return this.spooled(body, async (load) => {
        const data = await this.withinQuota(t, await load());
        const work = await this.lifecycle.beginInPlace(t, existing);
        const version = await this.inPlace(work, () =>
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
      return this.spooled(body, async (load) => {
        const data = await this.withinQuota(t, await load());
        const work = await this.lifecycle.beginInPlace(t, existing);
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
  async createStreamed(t: TenantContext, id: string[], raw: Body, dialect: Dialect, properties: Record<string, string> = {}): Promise<EnterpriseCreateTableResponse> {
    const { body, bytes } = counting(raw);
    // About two chunks are held at once (the one being read, the one being written): reserved up front by
    // Content-Length, else as the bytes arrive, up to that.
    const cap = 2 * this.limits.ingestChunkBytes;
    const reservation = await this.admit(body, Math.min(body.contentLength ?? 0, cap));
    const source = body.contentLength === undefined ? metered(body, (n) => reservation.grow(Math.min(n, cap - reservation.bytes))) : body;
    try {
      const created = await this.createStreamedAdmitted(t, id, source, dialect, properties, bytes, raw.beforeCommit);
      this.meter.ingested(t.database.id, created.num_rows, bytes());
      return created;
    } catch (err) {
      await this.settleRefused(body, err);
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
    if (existing || !work) {
      throw dialect === 'remote' ? Errors.tableAlreadyExistsRemote(display(id)) : Errors.tableAlreadyExists(display(id));
    }
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
      if (dialect === 'remote' && err instanceof ApiError && err.code === ErrorCode.TableAlreadyExists) {
        throw Errors.tableAlreadyExistsRemote(display(id));
      }
      throw err;
    }
  }

  async insert(t: TenantContext, id: string[], mode: 'append' | 'overwrite', body: Body, branch?: string): Promise<InsertIntoTableResponse> {
    return this.spooled(body, (load) => this.insertSpooled(t, id, mode, load, branch, body.claim));
  }

  private async insertSpooled(
    t: TenantContext,
    id: string[],
    mode: 'append' | 'overwrite',
    load: () => Promise<Loaded>,
    branch?: string,
    claim?: CarriedClaim,
  ): Promise<InsertIntoTableResponse> {
    // A keyed insert's claim goes in the reservation's statement (docs/idempotency.md).
    const { row, work } = await this.lifecycle.getForWrite(t, id, claim);
    const data = await this.bodyFor(t, work, load);
    const out = await this.inPlace(work, async () => {
      if (!(await this.tables.hasData(row))) {
        this.data.assertNoBranch(id, branch);
        const version = await this.data.commit(() => this.engine.create(row.location, data.file, 'create'), (v) => ({ version: v, num_rows: data.rows }));
        await this.markWrittenQuietly(row);
        return { version, num_inserted_rows: data.rows };
      }
      if (data.batches === 0 && mode === 'append') {
        this.audit.nothingChanged();
        return { version: await this.engine.latestVersion(row.location, branch), num_inserted_rows: 0 };
      }
      const version = await this.data.commit(() => this.engine.append(row.location, data.file, mode, branch), (v) => ({ version: v, mode, num_rows: data.rows }));
      return { version, num_inserted_rows: data.rows };
    });
    this.meterWrite(t, row.id, data);
    return out;
  }

  async mergeInsert(t: TenantContext, id: string[], opts: MergeOptions, body: Body): Promise<MergeInsertIntoTableResponse> {
    assertEngineSql(opts.whenMatchedUpdateAllFilt, 'when_matched_update_all_filt');
    assertEngineSql(opts.whenNotMatchedBySourceDeleteFilt, 'when_not_matched_by_source_delete_filt');
    return this.spooled(body, async (load) => {
      const { row, work } = await this.lifecycle.getForWrite(t, id, body.claim);
      const data = await this.bodyFor(t, work, load);
      const out = await this.inPlace(work, () => this.merge(id, row, opts, data));
      this.meterWrite(t, row.id, data);
      return out;
    });
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
      // Its new and rewritten rows are about its body (what the storage estimate counts, docs/usage-and-quotas.md).
    }, opts.branch, { bodyBytes: data.file.length }), merged);
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
    this.meter.touch(tableId);
  }

  /**
   * A write whose body is committed at once: refused before anything is read when its Content-Length is over
   * ARROW_BUFFERED_LIMIT_BYTES (413). Its body is spilled to a temporary file while it arrives, each message body
   * reserved from the write budget while it is held; `load` then reserves what the commit costs (the file size ×
   * COMMIT_MEMORY_FACTOR), reads the file into memory for the commit, and keeps the reservation until `fn` ends.
   * Every wait for the budget happens while the write holds none of it (so writes never wait on each other in a
   * circle); past WRITE_BUDGET_WAIT_MS it is a 503 with nothing written. The file and the reservations go when `fn`
   * ends, however it ends.
   */
  private async spooled<T>(raw: Body, fn: (load: () => Promise<Loaded>) => Promise<T>): Promise<T> {
    const { body, bytes } = counting(raw);
    const limit = this.limits.bufferedBodyBytes;
    if (body.contentLength !== undefined && body.contentLength > limit) {
      throw Errors.payloadTooLarge(`request body of ${body.contentLength} bytes exceeds the limit of ${limit} bytes`);
    }
    let message: Reservation | undefined;
    let whole: Reservation | undefined;
    let file: string | undefined;
    try {
      file = await this.budget.spillPath();
      const path = file;
      return await fn(async () => {
        const spilled = await spillWholeStream(body, limit, path, {
          hold: async (n) => {
            message = await this.budget.reserve(n);
          },
          free: () => {
            message?.release();
            message = undefined;
          },
        });
        await body.beforeCommit?.(); // the body is in: the request's exactly-once check before anything commits
        whole = await this.budget.reserve(spilled.bytes * COMMIT_MEMORY_FACTOR);
        const buf = await fs.promises.readFile(path);
        await fs.promises.rm(path, { force: true });
        return { schema: spilled.schema, file: buf, rows: spilled.rows, batches: spilled.batches, bodyBytes: bytes() };
      });
    } catch (err) {
      await this.settleRefused(body, err);
      throw err;
    } finally {
      if (file) await fs.promises.rm(file, { force: true }).catch(() => undefined);
      message?.release();
      whole?.release();
    }
  }

  /**
   * A write refused for the budget part-way through its body (the rest is being discarded): answers once the body
   * has arrived (up to ARROW_BUFFERED_LIMIT_BYTES more of it), so that the client, still sending, reads the 503
   * (which its retry needs) instead of a connection cut by the HTTP edge.
   */
  private async settleRefused(body: Body, err: unknown): Promise<void> {
    if (err instanceof ApiError && err.status === 503) await body.settled?.(this.limits.bufferedBodyBytes);
  }

  /**
   * Reserves `bytes` of the write budget (waiting for them up to WRITE_BUDGET_WAIT_MS); a refused body is read and
   * discarded first, so that the client reads the 503.
   */
  private async admit(body: Body, bytes: number): Promise<Reservation> {
    try {
      return await this.budget.reserve(bytes);
    } catch (err) {
      await discard(body, this.limits.bufferedBodyBytes);
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
    await this.lifecycle.markWritten(row).catch(() => undefined);
  }

  // ---------------------------------------------------------------- multipart writes

  /**
   * MultipartWrite create: a new upload id for the table (of `branch`, which must exist, and which the id names).
   * Nothing is recorded: an upload is the parts staged under its id, on the table's own storage, so that every
   * replica sees them.
   */
  async createUpload(t: TenantContext, id: string[], branch?: string): Promise<{ upload_id: string }> {
    const row = await this.tables.get(t, id);
    if (branchOf(branch)) {
      if (!(await this.tables.hasData(row))) this.data.assertNoBranch(id, branch);
      await this.engine.read(row.location, (table) => table.version(), { branch });
    }
    return { upload_id: newUploadId(branch) };
  }

  /**
   * A part of a multipart write (an insert with `upload_id` and `upload_part_id`): staged as a Lance dataset of its
   * own at `<table>/_uploads/<upload_id>/<part>.lance`, nothing committed to the table. Its body is spooled and
   * counted against the write budget like any insert; the same part sent again (a client retry) replaces it.
   */
  async stagePart(t: TenantContext, id: string[], uploadId: string, partId: string, body: Body): Promise<InsertIntoTableResponse> {
    assertUploadId(uploadId);
    if (!SAFE_PART.test(partId)) throw Errors.invalidInput('upload_part_id must be 1 to 64 letters, digits, `-` or `_`');
    return this.spooled(body, async (load) => {
      const row = await this.tables.get(t, id);
      const data = await load();
      await this.engine.create(`${uploadFolder(row.location, uploadId)}/${partId}.lance`, data.file, 'overwrite');
      // The table is unchanged until complete, whose audit record names the upload, its parts and rows.
      this.audit.nothingChanged();
      return { version: 0, num_inserted_rows: 0 };
    });
  }

  /**
   * MultipartWrite complete: every staged part of the upload committed to the table (of `branch`) in one commit,
   * then the staged parts removed. The parts are read back through the engine and held at once for the commit (the
   * engine's write takes one in-memory IPC file), reserved from the write budget as they are read (503 when they do
   * not fit) and bounded by ARROW_BUFFERED_LIMIT_BYTES (413). An upload with no parts (or completed already, as a
   * retried complete finds it) commits nothing and answers the table's version.
   */
  async completeUpload(t: TenantContext, id: string[], uploadId: string, branch?: string): Promise<{ version: number; num_inserted_rows: number }> {
    assertUploadId(uploadId);
    if (!uploadIsFor(uploadId, branch)) {
      throw Errors.invalidInput(
        `upload ${uploadId} was not created for ${branchOf(branch) ? `branch '${branchOf(branch)}'` : 'the main branch'}: complete it with the branch it was created for`,
      );
    }
    const { row, work } = await this.lifecycle.getForWrite(t, id);
    const folder = uploadFolder(row.location, uploadId);
    const reservation = await this.budget.reserve(0).catch((err) => {
      work.done();
      throw err;
    });
    try {
      const parts = (await this.storage.list(folder)).filter((e) => e.isDir && e.name.endsWith('.lance')).map((e) => e.name).sort();
      if (parts.length === 0) {
        work.done();
        this.audit.nothingChanged();
        const version = (await this.tables.hasData(row)) ? await this.engine.latestVersion(row.location, branch) : 0;
        return { version, num_inserted_rows: 0 };
      }
      const staged = await this.readParts(folder, parts, reservation).catch((err) => {
        work.done();
        throw err;
      });
      const version = await this.inPlace(work, async () => {
        if (!(await this.tables.hasData(row))) {
          this.data.assertNoBranch(id, branch);
          const v = await this.data.commit(() => this.engine.create(row.location, staged.file, 'create'), (x) => ({ version: x, upload_id: uploadId, parts: parts.length, num_rows: staged.rows }));
          await this.markWrittenQuietly(row);
          return v;
        }
        return this.data.commit(
          () => this.engine.append(row.location, staged.file, 'append', branch),
          (x) => ({ version: x, upload_id: uploadId, parts: parts.length, num_rows: staged.rows }),
        );
      });
      // After the commit nothing may fail the request: staged parts left behind go with the table.
      await this.storage.remove(folder).catch(() => undefined);
      return { version, num_inserted_rows: staged.rows };
    } finally {
      reservation.release();
    }
  }

  /** MultipartWrite abort: the upload's staged parts removed; nothing was committed. Unknown or finished: nothing to do. */
  async abortUpload(t: TenantContext, id: string[], uploadId: string): Promise<Record<string, never>> {
    assertUploadId(uploadId);
    const row = await this.tables.get(t, id);
    await this.storage.remove(uploadFolder(row.location, uploadId));
    return {};
  }

  /** The staged parts as one IPC file (their schemas must agree), reserving what is held as it grows. */
  private async readParts(folder: string, parts: string[], reservation: Reservation): Promise<{ file: Buffer; rows: number }> {
    let schemaMsg: IpcMessage | undefined;
    let schema: Schema | undefined;
    const batches: IpcMessage[] = [];
    let bytes = 0;
    let rows = 0;
    for (const part of parts) {
      await this.engine.readTable(`${folder}/${part}`, async (table) => {
        for await (const messages of engineBatches(table)) {
          for (const m of messages) {
            if (m.kind === 'schema') {
              if (!schemaMsg) {
                schemaMsg = m;
                schema = decodeSchema(m);
              } else if (!m.framedMeta.equals(schemaMsg.framedMeta) && schemaKey(decodeSchema(m)) !== schemaKey(schema as Schema)) {
                throw Errors.schemaValidation(`the parts of this upload do not have the same schema (part ${part.replace(/\.lance$/, '')})`);
              }
            } else if (m.kind === 'dictionary') {
              throw Errors.invalidInput('multipart writes of dictionary-encoded columns are not supported');
            } else {
              const n = m.framedMeta.length + m.bodyLength;
              bytes += n;
              if (bytes > this.limits.bufferedBodyBytes) {
                throw Errors.payloadTooLarge(`the parts of this upload exceed the limit of ${this.limits.bufferedBodyBytes} bytes for one commit`);
              }
              reservation.grow(n * COMMIT_MEMORY_FACTOR);
              batches.push(m);
              rows += m.rows;
            }
          }
        }
      });
    }
    if (!schemaMsg || !schema) throw Errors.invalidInput('the staged parts of this upload have no schema');
    return { file: ipcFile(schema, schemaMsg, [], batches), rows };
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
