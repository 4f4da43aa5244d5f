import { Controller, Post } from '@nestjs/common';
import { z } from 'zod';
import { Delimiter, ObjectId } from '../../../platform/http/route-params';
import { ValidBody } from '../../../platform/http/validation/zod-validation.pipe';
import { Audited } from '../../audit';
import { ErrorStatus, Operation } from '../../../platform/http/operation.decorator';
import { Tenant, TenantContext } from '../../identity';
import {
  BatchCommitTablesBody,
  BatchCommitTablesResponse,
  BatchCreateTableVersionsBody,
  BatchCreateTableVersionsResponse,
  BatchDeleteTableVersionsBody,
  BatchDeleteTableVersionsResponse,
  CreateTableVersionBody,
  CreateTableVersionResponse,
} from './managed-versions.schemas';
import { ManagedVersionsService } from './managed-versions.service';

const ERRORS: ErrorStatus[] = [400, 401, 403, 404, 406, 409, 503, '5XX'];
const MANAGED_ONLY = 'Only for databases with `managed_versioning` (406, code 0, otherwise: Lance commits to storage itself there).';

/** Catalog-managed versions (the spec's `managed_versioning`): the commit routes. List and describe are the data plane's. */
@Controller('v1')
export class ManagedVersionsController {
  constructor(private readonly versions: ManagedVersionsService) {}

  @Post('table/:id/version/create')
  @Operation({
    operationId: 'CreateTableVersion',
    summary: 'Create a new table version',
    description:
      'Claims `version` of the table in the catalog and publishes the staged manifest (`manifest_path`, a file in the ' +
      "table's `_versions` folder) under the version's own name, put-if-absent, in one unit of work. 409 (code 14) " +
      'when the version exists: re-read the latest version and retry. The answer names the published manifest. ' +
      MANAGED_ONLY,
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'insert', on: 'table' },
    responses: { 200: { description: 'The version', schema: CreateTableVersionResponse } },
    errors: ERRORS,
  })
  @Audited('table.version_create', (b) => ({ version: b?.version ?? null, branch: b?.branch ?? null }))
  create(
    @Tenant() t: TenantContext,
    @ObjectId() id: string[],
    @ValidBody(CreateTableVersionBody) body: z.output<typeof CreateTableVersionBody>,
  ) {
    return this.versions.create(t, { ...body, id });
  }

  @Post('table/:id/version/delete')
  @Operation({
    operationId: 'BatchDeleteTableVersions',
    summary: 'Delete table version records',
    description:
      "Removes the catalog's records of the versions in `ranges` (start inclusive, end exclusive; `end_version: -1` " +
      'up to the latest); the data stays. ' +
      MANAGED_ONLY,
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'manage', on: 'table' },
    responses: { 200: { description: 'How many records were removed', schema: BatchDeleteTableVersionsResponse } },
    errors: ERRORS,
  })
  @Audited('table.version_delete')
  delete(
    @Tenant() t: TenantContext,
    @ObjectId() id: string[],
    @ValidBody(BatchDeleteTableVersionsBody) body: z.output<typeof BatchDeleteTableVersionsBody>,
  ) {
    return this.versions.deleteVersions(t, { ...body, id });
  }

  @Post('table/version/batch-create')
  @Operation({
    operationId: 'BatchCreateTableVersions',
    summary: 'Atomically create versions for multiple tables',
    description:
      'CreateTableVersion for every entry in one catalog transaction: all versions are created, or (on any failure, ' +
      "e.g. one entry's version exists: 409 code 14) none, and no manifest of the batch is left published. " +
      MANAGED_ONLY,
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'insert', on: 'database' },
    responses: { 200: { description: 'The versions, in the order of the entries', schema: BatchCreateTableVersionsResponse } },
    errors: ERRORS,
  })
  @Audited('table.version_batch_create', (b) => ({ entries: Array.isArray(b?.entries) ? b.entries.length : null }))
  batchCreate(
    @Tenant() t: TenantContext,
    @Delimiter() _delimiter: string,
    @ValidBody(BatchCreateTableVersionsBody) body: z.output<typeof BatchCreateTableVersionsBody>,
  ) {
    return this.versions.batchCreate(t, body.entries);
  }

  @Post('table/batch-commit')
  @Operation({
    operationId: 'BatchCommitTables',
    summary: 'Atomically commit a batch of mixed table operations',
    description:
      '`create_table_version` and `delete_table_versions` operations on any tables of the database, in one catalog ' +
      'transaction: all applied or none. `declare_table` and `deregister_table` inside a batch answer 406 (code 0) ' +
      'and nothing is applied. ' +
      MANAGED_ONLY,
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'insert', on: 'database' },
    responses: { 200: { description: 'One result per operation, in order', schema: BatchCommitTablesResponse } },
    errors: ERRORS,
  })
  @Audited('table.batch_commit', (b) => ({ operations: Array.isArray(b?.operations) ? b.operations.length : null }))
  batchCommit(
    @Tenant() t: TenantContext,
    @Delimiter() _delimiter: string,
    @ValidBody(BatchCommitTablesBody) body: z.output<typeof BatchCommitTablesBody>,
  ) {
    return this.versions.batchCommit(
      t,
      body.operations.map((op) => ({
        create_table_version: op.create_table_version ?? undefined,
        delete_table_versions: op.delete_table_versions ?? undefined,
        declare_table: op.declare_table ?? undefined,
        deregister_table: op.deregister_table ?? undefined,
      })),
    );
  }
}
