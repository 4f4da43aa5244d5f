import { createHash, randomBytes } from 'node:crypto';
import { Schema } from 'apache-arrow';
import { Inject, Injectable } from '@nestjs/common';
import { Errors } from '../../../platform/http/errors';
import { APP_CONFIG, AppConfig } from '../../../platform/config/config';
import { isUuid } from '../../../platform/http/validation/fields';
import type { InsertIntoTableResponse } from './table-writes.schemas';
import { TablesService, TableWriteLifecycle } from '../../catalog';
import { TableStorage } from '../../../engine/storage/table-storage.service';
import { TenantContext } from '../../identity';
import { ipcFile } from '../../../engine/arrow/arrow-ipc-file';
import { decodeSchema, IpcMessage } from '../../../engine/arrow/arrow-ipc-message';
import { engineBatches } from '../../../engine/arrow/engine-batches';
import { branchOf, LanceEngine } from '../../../engine/lance/lance-engine';
import { AuditService } from '../../audit';
import { DataTables } from '../data-tables.service';
import { Body } from '../dataplane.types';
import { COMMIT_MEMORY_FACTOR, Reservation, WriteBudget } from './write-budget';
import { inPlace, markWrittenQuietly, WriteBodies } from './write-bodies';

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

const uploadIsFor = (uploadId: string, branch: string | undefined) =>
  Buffer.from(uploadId.replace(/-/g, ''), 'hex').subarray(12).equals(branchTag(branch));

/** A schema's fields, for comparing the schemas of staged parts. */
const schemaKey = (s: Schema) => s.fields.map((f) => `${f.name}:${String(f.type)}:${f.nullable}`).join(',');

/** Where the parts of an upload are staged: `<table>/_uploads/<upload_id>/`, on the table's own storage. */
const uploadFolder = (location: string, uploadId: string) => `${location}/_uploads/${uploadId}`;

/** Multipart writes: parts staged under an upload id, committed to the table at once by complete (or aborted). */
@Injectable()
export class MultipartWrites {
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
    private readonly bodies: WriteBodies,
  ) {
    this.limits = config.arrow;
  }

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
    return this.bodies.spooled(body, async (load) => {
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
  async completeUpload(
    t: TenantContext,
    id: string[],
    uploadId: string,
    branch?: string,
  ): Promise<{ version: number; num_inserted_rows: number }> {
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
      const parts = (await this.storage.list(folder))
        .filter((e) => e.isDir && e.name.endsWith('.lance'))
        .map((e) => e.name)
        .sort();
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
      const version = await inPlace(work, async () => {
        if (!(await this.tables.hasData(row))) {
          this.data.assertNoBranch(id, branch);
          const v = await this.data.commit(
            () => this.engine.create(row.location, staged.file, 'create'),
            (x) => ({ version: x, upload_id: uploadId, parts: parts.length, num_rows: staged.rows }),
          );
          await markWrittenQuietly(this.lifecycle, row);
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
                throw Errors.schemaValidation(
                  `the parts of this upload do not have the same schema (part ${part.replace(/\.lance$/, '')})`,
                );
              }
            } else if (m.kind === 'dictionary') {
              throw Errors.invalidInput('multipart writes of dictionary-encoded columns are not supported');
            } else {
              const n = m.framedMeta.length + m.bodyLength;
              bytes += n;
              if (bytes > this.limits.bufferedBodyBytes) {
                throw Errors.payloadTooLarge(
                  `the parts of this upload exceed the limit of ${this.limits.bufferedBodyBytes} bytes for one commit`,
                );
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
}
