import { Controller, Get, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { dialectOf } from '../../../engine/arrow/dialect';
import { ObjectId } from '../../../platform/http/route-params';
import { ValidBody, ValidQuery } from '../../../platform/http/validation/zod-validation.pipe';
import { Audited } from '../../audit';
import { CATALOG_ERRORS, Operation, WITH_CONFLICT } from '../../../platform/http/operation.decorator';
import { Tenant, TenantContext } from '../../identity';
import { BranchQuery, EmptyResponse, QueryBody } from '../dataplane.schemas';
import { ExplainTableQueryPlanResponse } from '../reads/table-reads.schemas';
import { CreateIndexBody } from '../indices/table-indices.schemas';
import { TableIndicesService } from '../indices/table-indices.service';
import { TableMetadataService } from '../schema/table-metadata.service';
import { TableReadsService } from '../reads/table-reads.service';
import {
  AnalyzePlanQuery,
  BranchNameBody,
  CreateBranchBody,
  FromBranchBody,
  FieldMetadataBody,
  GetTableTagVersionResponse,
  ListTableBranchesResponse,
  ListTableTagsResponse,
  RefsPageQuery,
  RemoteListTagsResponse,
  SchemaMetadataBody,
  TagBody,
  TagVersionBody,
  UpdateFieldMetadataResponse,
} from './table-refs.schemas';
import { TableRefsService } from './table-refs.service';

/**
 * Tags, branches, field metadata, AnalyzeTableQueryPlan and CreateTableScalarIndex, in both dialects (the spec's
 * routes are the official remote client's, with a trailing slash).
 */
@Controller('v1')
export class TableRefsController {
  constructor(
    private readonly refs: TableRefsService,
    private readonly metadata: TableMetadataService,
    private readonly reads: TableReadsService,
    private readonly indices: TableIndicesService,
  ) {}

  // ---------------------------------------------------------------- tags

  @Post('table/:id/tags/list')
  @Operation({
    operationId: 'ListTableTags',
    summary: 'List all tags for a table',
    description:
      'Every tag of the table by name (`page_token`/`limit` page through them; all when `limit` is absent). The ' +
      'official remote client gets the bare map of tags (what it parses), a namespace client `{tags}`.',
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'select', on: 'table' },
    responses: { 200: { description: 'The tags', schema: z.union([ListTableTagsResponse, RemoteListTagsResponse]) } },
    errors: CATALOG_ERRORS,
  })
  async listTags(
    @Tenant() t: TenantContext,
    @ObjectId() id: string[],
    @ValidQuery(RefsPageQuery) q: z.output<typeof RefsPageQuery>,
    @Req() req: FastifyRequest,
  ) {
    const r = await this.refs.listTags(t, id, q);
    return dialectOf(req) === 'remote' ? r.tags : r;
  }

  @Get('table/:id/tags/list')
  @Operation({
    operationId: 'ListTableTagsWithGet',
    summary: 'List all tags for a table (GET)',
    description: 'ListTableTags as the reference adapter and the generated namespace clients send it (GET, no body).',
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'select', on: 'table' },
    responses: { 200: { description: 'The tags', schema: z.union([ListTableTagsResponse, RemoteListTagsResponse]) } },
    errors: CATALOG_ERRORS,
  })
  listTagsGet(
    @Tenant() t: TenantContext,
    @ObjectId() id: string[],
    @ValidQuery(RefsPageQuery) q: z.output<typeof RefsPageQuery>,
    @Req() req: FastifyRequest,
  ) {
    return this.listTags(t, id, q, req);
  }

  @Post('table/:id/tags/version')
  @Operation({
    operationId: 'GetTableTagVersion',
    summary: 'Get version for a specific tag',
    description: 'The version a tag points to (and its branch, when not main); 404 (code 8) for an unknown tag.',
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'select', on: 'table' },
    responses: { 200: { description: 'The tagged version', schema: GetTableTagVersionResponse } },
    errors: CATALOG_ERRORS,
  })
  tagVersion(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(TagBody) body: z.output<typeof TagBody>) {
    return this.refs.tagVersion(t, id, body.tag);
  }

  @Post('table/:id/tags/create')
  @Operation({
    operationId: 'CreateTableTag',
    summary: 'Create a new tag',
    description: 'A tag at `version` of `branch` (main when absent); 409 (code 9) when the tag exists, 404 (code 11) for no such version.',
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'manage', on: 'table' },
    responses: { 200: { description: 'Created (an empty object)', schema: EmptyResponse } },
    errors: WITH_CONFLICT,
  })
  @Audited('table.tag_create', (b) => ({ tag: b?.tag ?? null, version: b?.version ?? null }))
  createTag(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(TagVersionBody) body: z.output<typeof TagVersionBody>) {
    return this.refs.createTag(t, id, body.tag, body.version, body.branch);
  }

  @Post('table/:id/tags/delete')
  @Operation({
    operationId: 'DeleteTableTag',
    summary: 'Delete a tag',
    description: '404 (code 8) for an unknown tag.',
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'manage', on: 'table' },
    responses: { 200: { description: 'Deleted (an empty object)', schema: EmptyResponse } },
    errors: CATALOG_ERRORS,
  })
  @Audited('table.tag_delete', (b) => ({ tag: b?.tag ?? null }))
  deleteTag(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(TagBody) body: z.output<typeof TagBody>) {
    return this.refs.deleteTag(t, id, body.tag);
  }

  @Post('table/:id/tags/update')
  @Operation({
    operationId: 'UpdateTableTag',
    summary: 'Update a tag to point to a different version',
    description: 'Moves the tag to `version` of `branch` (main when absent); 404 (code 8) for an unknown tag.',
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'manage', on: 'table' },
    responses: { 200: { description: 'Updated (an empty object)', schema: EmptyResponse } },
    errors: CATALOG_ERRORS,
  })
  @Audited('table.tag_update', (b) => ({ tag: b?.tag ?? null, version: b?.version ?? null }))
  updateTag(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(TagVersionBody) body: z.output<typeof TagVersionBody>) {
    return this.refs.updateTag(t, id, body.tag, body.version, body.branch);
  }

  // ---------------------------------------------------------------- branches

  @Post('table/:id/branches/list')
  @Operation({
    operationId: 'ListTableBranches',
    summary: 'List all branches for a table',
    description: 'Every branch but main, by name (`page_token`/`limit` page through them; all when `limit` is absent).',
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'select', on: 'table' },
    responses: { 200: { description: 'The branches', schema: ListTableBranchesResponse } },
    errors: CATALOG_ERRORS,
  })
  listBranches(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidQuery(RefsPageQuery) q: z.output<typeof RefsPageQuery>) {
    return this.refs.listBranches(t, id, q);
  }

  @Post('table/:id/branches/create')
  @Operation({
    operationId: 'CreateTableBranch',
    summary: 'Create a new branch',
    description:
      'Forks `name` from `from_branch` (main when absent) at `from_version` (its latest when absent). 409 (code 23) ' +
      'when the branch exists, 404 (code 22) for an unknown source branch, 404 (code 11) for no such version.',
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'manage', on: 'table' },
    responses: { 200: { description: 'Created (an empty object)', schema: EmptyResponse } },
    errors: WITH_CONFLICT,
  })
  @Audited('table.branch_create', (b) => ({ branch: b?.name ?? null }))
  createBranch(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(CreateBranchBody) body: z.output<typeof CreateBranchBody>) {
    return this.refs.createBranch(t, id, body.name, body.from_branch, body.from_version);
  }

  @Post('table/:id/branches/delete')
  @Operation({
    operationId: 'DeleteTableBranch',
    summary: 'Delete a branch',
    description: 'Removes the branch and its data; 404 (code 22) for an unknown branch, 409 (code 19) while tags point into it.',
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'manage', on: 'table' },
    responses: { 200: { description: 'Deleted (an empty object)', schema: EmptyResponse } },
    errors: WITH_CONFLICT,
  })
  @Audited('table.branch_delete', (b) => ({ branch: b?.name ?? null }))
  deleteBranch(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(BranchNameBody) body: z.output<typeof BranchNameBody>) {
    return this.refs.deleteBranch(t, id, body.name);
  }

  @Post('table/:id/branches/diff')
  @Operation({
    operationId: 'DiffTableBranch',
    summary: 'Compare a branch with main',
    description:
      'Not supported: the open Lance engine computes branch diffs only for LanceDB Enterprise tables. 406 (code 0) ' +
      'for a table that exists (404 code 4 otherwise).',
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'select', on: 'table' },
    responses: { 200: { description: 'Never answered: always 406 (code 0)' } },
    errors: [400, 401, 403, 404, 406, 503, '5XX'],
  })
  diffBranch(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(FromBranchBody) body: z.output<typeof FromBranchBody>) {
    return this.refs.branchMergeUnsupported(t, id, 'compared with main', body.from_branch);
  }

  @Post('table/:id/branches/cherry_pick')
  @Operation({
    operationId: 'CherryPickTableBranch',
    summary: 'Cherry-pick a branch onto main',
    description:
      'Not supported: the open Lance engine cherry-picks branches only for LanceDB Enterprise tables. 406 (code 0) ' +
      'for a table that exists (404 code 4 otherwise); nothing is changed, `dry_run` or not.',
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'manage', on: 'table' },
    responses: { 200: { description: 'Never answered: always 406 (code 0)' } },
    errors: [400, 401, 403, 404, 406, 503, '5XX'],
  })
  cherryPick(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(FromBranchBody) body: z.output<typeof FromBranchBody>) {
    return this.refs.branchMergeUnsupported(t, id, 'cherry-picked onto main', body.from_branch);
  }

  // ---------------------------------------------------------------- metadata

  @Post('table/:id/update_field_metadata')
  @Operation({
    operationId: 'UpdateFieldMetadata',
    summary: 'Update per-field metadata',
    description:
      "Merges each update's metadata into its field's (a `null` value removes the key; `replace` swaps the whole " +
      'map). 404 (code 12) for a path that names no field.',
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'manage', on: 'table' },
    responses: { 200: { description: 'Updated', schema: UpdateFieldMetadataResponse } },
    errors: WITH_CONFLICT,
  })
  @Audited('table.update_field_metadata')
  updateFieldMetadata(
    @Tenant() t: TenantContext,
    @ObjectId() id: string[],
    @ValidBody(FieldMetadataBody) body: z.output<typeof FieldMetadataBody>,
  ) {
    return this.metadata.updateFieldMetadata(t, id, body.updates, body.branch);
  }

  @Post('table/:id/schema_metadata/update')
  @Operation({
    operationId: 'UpdateTableSchemaMetadata',
    summary: 'Update table schema metadata',
    description: 'Not supported: the Lance engine binding cannot replace schema metadata. Answers 406 (code 0) for a table that exists.',
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'manage', on: 'table' },
    responses: { 200: { description: 'Never answered (406)', schema: z.record(z.string(), z.string()) } },
    errors: [400, 401, 403, 404, 406, 503, '5XX'],
  })
  updateSchemaMetadata(
    @Tenant() t: TenantContext,
    @ObjectId() id: string[],
    @ValidQuery(BranchQuery) _q: z.output<typeof BranchQuery>,
    @ValidBody(SchemaMetadataBody) _body: z.output<typeof SchemaMetadataBody>,
  ) {
    return this.metadata.updateSchemaMetadata(t, id);
  }

  // ---------------------------------------------------------------- plans and indices

  /** A JSON string literal, as explain_plan. */
  @Post('table/:id/analyze_plan')
  @Operation({
    operationId: 'AnalyzeTableQueryPlan',
    summary: 'Analyze query execution plan',
    description: "Runs the query (either dialect's shape, as QueryTable) and answers its plan with run metrics, as a JSON string literal.",
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'select', on: 'table' },
    responses: { 200: { description: 'The analysed plan', schema: ExplainTableQueryPlanResponse, encoded: true } },
    errors: CATALOG_ERRORS,
  })
  async analyzePlan(
    @Tenant() t: TenantContext,
    @ObjectId() id: string[],
    @ValidQuery(AnalyzePlanQuery) _q: z.output<typeof AnalyzePlanQuery>,
    @ValidBody(QueryBody) body: z.output<typeof QueryBody>,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const plan = await this.reads.analyzePlan(t, id, body);
    reply.type('application/json');
    return JSON.stringify(plan);
  }

  @Post('table/:id/create_scalar_index')
  @Operation({
    operationId: 'CreateTableScalarIndex',
    summary: 'Create a scalar index on a table',
    description:
      'CreateTableIndex for scalar and full-text types (BTREE, BITMAP, LABEL_LIST, FTS, …); a vector type is a 400. Builds the index before answering.',
    tag: 'Index',
    access: 'catalog',
    needs: { privilege: 'manage', on: 'table' },
    responses: { 200: { description: 'Created (an empty object)', schema: EmptyResponse } },
    errors: WITH_CONFLICT,
  })
  @Audited('table.create_index', (b) => ({ column: b?.column ?? null, index_type: b?.index_type ?? null }))
  createScalarIndex(
    @Tenant() t: TenantContext,
    @ObjectId() id: string[],
    @ValidBody(CreateIndexBody) body: z.output<typeof CreateIndexBody>,
  ) {
    return this.indices.createScalarIndex(t, id, body);
  }
}
