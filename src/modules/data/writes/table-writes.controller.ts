import { Controller, Post, Req } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import { Errors } from '../../../platform/http/errors';
import {
  CreateTableResponse,
  DeleteFromTableResponse,
  InsertIntoTableResponse,
  MergeInsertIntoTableResponse,
  UpdateTableResponse,
} from './table-writes.schemas';
import { ObjectId } from '../../../platform/http/route-params';
import { ValidBody, ValidQuery } from '../../../platform/http/validation/zod-validation.pipe';
import { Audited } from '../../audit';
import { ARROW_ERRORS, Operation, TIMEOUT_HEADER, WITH_CONFLICT } from '../../../platform/http/operation.decorator';
import { Tenant, TenantContext } from '../../identity';
import { dialectOf } from '../../../engine/arrow/dialect';
import { ArrowStream } from '../arrow-body';
import { timeoutMs } from '../request-timeout';
import { CreateTableQuery, DeleteBody, InsertQuery, MergeInsertQuery, UpdateBody } from './table-writes.schemas';
import { TableWritesService } from './table-writes.service';
import { MultipartWrites } from './multipart-writes.service';

/**
 * Row writes (create, insert, merge_insert, update, delete), in the official remote client's dialect and the Lance
 * Namespace spec's; Arrow bodies are read as streams (../arrow-body.ts).
 */
@Controller('v1')
export class TableWritesController {
  constructor(
    private readonly writes: TableWritesService,
    private readonly multipart: MultipartWrites,
  ) {}

  @Post('table/:id/create')
  @Operation({
    operationId: 'CreateTable',
    summary: 'Create a table with the given name',
    description:
      'Creates (or, by `mode`, keeps or overwrites) a table from an Arrow IPC stream. A new table is streamed into ' +
      'storage and registered when complete; a declared table gets its first version at its declared location.',
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'create', on: 'table', creates: true },
    responses: { 200: { description: 'The table', schema: CreateTableResponse } },
    errors: ARROW_ERRORS,
  })
  @Audited('table.create')
  create(
    @Tenant() t: TenantContext,
    @ObjectId() id: string[],
    @ValidQuery(CreateTableQuery) q: z.output<typeof CreateTableQuery>,
    @ArrowStream('The rows, as an Arrow IPC stream (the content type is not required).') rows: AsyncIterable<Buffer>,
    @Req() req: FastifyRequest,
  ) {
    return this.writes.create(t, id, q.mode, rows, dialectOf(req), q.properties);
  }

  @Post('table/:id/insert')
  @Operation({
    operationId: 'InsertIntoTable',
    summary: 'Insert records into a table',
    description:
      'Appends (or with `mode=overwrite` replaces) rows in one commit. With `upload_id` and `upload_part_id` the body is ' +
      "one part of a multipart write: staged on the table's storage and committed by multipart_write/complete " +
      '(answered with version 0 and nothing inserted yet).',
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'insert', on: 'table' },
    responses: { 200: { description: 'Inserted', schema: InsertIntoTableResponse } },
    errors: ARROW_ERRORS,
  })
  @Audited('table.insert')
  insert(
    @Tenant() t: TenantContext,
    @ObjectId() id: string[],
    @ValidQuery(InsertQuery) q: z.output<typeof InsertQuery>,
    @ArrowStream('The rows, as an Arrow IPC stream.') rows: AsyncIterable<Buffer>,
  ) {
    if (q.upload_id !== undefined || q.upload_part_id !== undefined) {
      if (q.upload_id === undefined || q.upload_part_id === undefined)
        throw Errors.invalidInput('a multipart part needs both upload_id and upload_part_id');
      if (q.mode === 'overwrite') throw Errors.invalidInput('a multipart write appends: mode=overwrite cannot be combined with upload_id');
      return this.multipart.stagePart(t, id, q.upload_id, q.upload_part_id, rows);
    }
    return this.writes.insert(t, id, q.mode, rows, q.branch);
  }

  @Post('table/:id/merge_insert')
  @Operation({
    operationId: 'MergeInsertIntoTable',
    summary: 'Merge insert (upsert) records into a table',
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'modify', on: 'table' },
    headers: [TIMEOUT_HEADER],
    responses: { 200: { description: 'Merged', schema: MergeInsertIntoTableResponse } },
    errors: ARROW_ERRORS,
  })
  @Audited('table.merge_insert')
  mergeInsert(
    @Tenant() t: TenantContext,
    @ObjectId() id: string[],
    @ValidQuery(MergeInsertQuery) q: z.output<typeof MergeInsertQuery>,
    @ArrowStream('The source rows, as an Arrow IPC stream.') rows: AsyncIterable<Buffer>,
    @Req() req: FastifyRequest,
  ) {
    return this.writes.mergeInsert(
      t,
      id,
      {
        on: q.on,
        whenMatchedUpdateAll: q.when_matched_update_all,
        whenMatchedUpdateAllFilt: q.when_matched_update_all_filt,
        whenNotMatchedInsertAll: q.when_not_matched_insert_all,
        whenNotMatchedBySourceDelete: q.when_not_matched_by_source_delete,
        whenNotMatchedBySourceDeleteFilt: q.when_not_matched_by_source_delete_filt,
        useIndex: q.use_index,
        timeoutMs: timeoutMs(req),
        branch: q.branch,
      },
      rows,
    );
  }

  @Post('table/:id/update')
  @Operation({
    operationId: 'UpdateTable',
    summary: 'Update rows in a table',
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'modify', on: 'table' },
    responses: { 200: { description: 'Updated', schema: UpdateTableResponse } },
    errors: WITH_CONFLICT,
  })
  @Audited('table.update', (b) => ({ predicate: b?.predicate ?? null }))
  update(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(UpdateBody) body: z.output<typeof UpdateBody>) {
    return this.writes.update(t, id, body.updates, body.predicate, body.branch);
  }

  @Post('table/:id/delete')
  @Operation({
    operationId: 'DeleteFromTable',
    summary: 'Delete rows from a table',
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'modify', on: 'table' },
    responses: { 200: { description: 'Deleted', schema: DeleteFromTableResponse } },
    errors: WITH_CONFLICT,
  })
  @Audited('table.delete', (b) => ({ predicate: b?.predicate ?? null }))
  delete(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(DeleteBody) body: z.output<typeof DeleteBody>) {
    return this.writes.delete(t, id, body.predicate, body.branch);
  }
}
