import { Controller, Post } from '@nestjs/common';
import { z } from 'zod';
import { ObjectId } from '../../../platform/http/route-params';
import { ValidQuery } from '../../../platform/http/validation/zod-validation.pipe';
import { Audited } from '../../audit';
import { ARROW_ERRORS, CATALOG_ERRORS, Operation } from '../../../platform/http/operation.decorator';
import { Tenant, TenantContext } from '../../identity';
import { BranchQuery, EmptyResponse } from '../dataplane.schemas';
import { UploadQuery } from './multipart.schemas';
import { MultipartWrites } from '../writes/multipart-writes.service';

const UploadCreated = z.object({ upload_id: z.string() }).meta({ id: 'MultipartWriteCreated' });
const UploadCompleted = z
  .object({ version: z.number().int(), num_inserted_rows: z.number().int() })
  .meta({ id: 'MultipartWriteCompleted' });

/**
 * Multipart writes of the official remote client (phalanx-version 0.4.0): create an upload, send its parts as
 * inserts with `upload_id` and `upload_part_id` (staged on the table's storage), then complete (one commit of every
 * part) or abort (the staged parts removed, nothing committed). No Lance Namespace spec operation.
 */
@Controller('v1')
export class MultipartController {
  constructor(private readonly writes: MultipartWrites) {}

  @Post('table/:id/multipart_write/create')
  @Operation({
    operationId: 'CreateMultipartWrite',
    summary: 'Start a multipart write',
    description: 'An upload id for the table (of `branch`, which must exist); its parts are inserts carrying it.',
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'insert', on: 'table' },
    responses: { 200: { description: 'The upload', schema: UploadCreated } },
    errors: CATALOG_ERRORS,
  })
  create(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidQuery(BranchQuery) q: z.output<typeof BranchQuery>) {
    return this.writes.createUpload(t, id, q.branch);
  }

  @Post('table/:id/multipart_write/complete')
  @Operation({
    operationId: 'CompleteMultipartWrite',
    summary: 'Commit a multipart write',
    description:
      'Commits every staged part in one version (of `branch`), then removes them. An upload with no parts left (a ' +
      'repeated complete) commits nothing and answers the current version. 413 when the parts exceed ' +
      'ARROW_BUFFERED_LIMIT_BYTES, 503 when the write budget cannot hold them, 400 code 20 when their schemas differ.',
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'insert', on: 'table' },
    responses: { 200: { description: 'Committed', schema: UploadCompleted } },
    errors: ARROW_ERRORS,
  })
  @Audited('table.insert')
  complete(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidQuery(UploadQuery) q: z.output<typeof UploadQuery>) {
    return this.writes.completeUpload(t, id, q.upload_id, q.branch);
  }

  @Post('table/:id/multipart_write/abort')
  @Operation({
    operationId: 'AbortMultipartWrite',
    summary: 'Abort a multipart write',
    description: 'Removes the staged parts; nothing is committed. An unknown or finished upload is nothing to do.',
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'insert', on: 'table' },
    responses: { 200: { description: 'Aborted (an empty object)', schema: EmptyResponse } },
    errors: CATALOG_ERRORS,
  })
  abort(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidQuery(UploadQuery) q: z.output<typeof UploadQuery>) {
    return this.writes.abortUpload(t, id, q.upload_id);
  }
}
