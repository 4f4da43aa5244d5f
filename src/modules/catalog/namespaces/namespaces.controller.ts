import { Controller, Get, Post, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import { IdOnlyBody } from '../catalog.schemas';
import {
  CreateNamespaceBody,
  CreateNamespaceResponse,
  DescribeNamespaceResponse,
  DropNamespaceBody,
  DropNamespaceResponse,
  ListNamespacesQuery,
  ListNamespacesResponse,
} from './namespaces.schemas';
import { ObjectId } from '../../../platform/http/route-params';
import { ValidBody, ValidQuery } from '../../../platform/http/validation/zod-validation.pipe';
import { Audited } from '../../audit';
import { CATALOG_ERRORS, Operation, WITH_CONFLICT } from '../../../platform/http/operation.decorator';
import { Tenant, TenantContext } from '../../identity';
import { NamespacesService } from './namespaces.service';

@Controller('v1/namespace/:id')
export class NamespacesController {
  constructor(private readonly namespaces: NamespacesService) {}

  @Post('create')
  @Operation({
    operationId: 'CreateNamespace',
    summary: 'Create a new namespace',
    description:
      '`mode` `Create` (409 if it exists), `ExistOk` or `Overwrite` (drops its contents), case-insensitive, ' +
      'PascalCase or snake_case. The parent must exist (404). Properties are stored and returned with an added `created_at`.',
    tag: 'Namespace',
    access: 'catalog',
    needs: { privilege: 'create', on: 'namespace', creates: true },
    responses: { 200: { description: 'The namespace', schema: CreateNamespaceResponse } },
    errors: WITH_CONFLICT,
  })
  @Audited('namespace.create', (b) => ({ mode: b.mode ?? 'Create' }))
  create(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(CreateNamespaceBody) body: z.output<typeof CreateNamespaceBody>) {
    return this.namespaces.create(t, id, body.mode, body.properties);
  }

  @Get('list')
  @Operation({
    operationId: 'ListNamespaces',
    summary: 'List namespaces',
    description: 'Direct children of namespace `{id}`, by name, sorted and paginated. 404 when `{id}` does not exist.',
    tag: 'Namespace',
    access: 'catalog',
    needs: { privilege: 'describe', on: 'namespace' },
    responses: { 200: { description: 'Child namespaces', schema: ListNamespacesResponse } },
    errors: CATALOG_ERRORS,
  })
  list(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidQuery(ListNamespacesQuery) q: z.output<typeof ListNamespacesQuery>) {
    return this.namespaces.list(t, id, q);
  }

  @Post('describe')
  @Operation({
    operationId: 'DescribeNamespace',
    summary: 'Describe a namespace',
    tag: 'Namespace',
    access: 'catalog',
    needs: { privilege: 'describe', on: 'namespace' },
    responses: { 200: { description: 'The namespace', schema: DescribeNamespaceResponse } },
    errors: CATALOG_ERRORS,
  })
  describe(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(IdOnlyBody) _body: unknown) {
    return this.namespaces.describe(t, id);
  }

  @Post('exists')
  @Operation({
    operationId: 'NamespaceExists',
    summary: 'Check if a namespace exists',
    description: '200 with no body when it exists, 404 (code 1) when not. The root namespace always exists.',
    tag: 'Namespace',
    access: 'catalog',
    needs: { privilege: 'describe', on: 'namespace' },
    responses: { 200: { description: 'It exists (no body)' } },
    errors: CATALOG_ERRORS,
  })
  async exists(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(IdOnlyBody) _body: unknown): Promise<void> {
    await this.namespaces.assertExists(t, id);
  }

  @Post('drop')
  @Operation({
    operationId: 'DropNamespace',
    summary: 'Drop a namespace',
    description:
      '`mode` `Fail` (a missing namespace → 400) or `Skip` (→ 204); `behavior` `Restrict` (contents → 409, code 3, ' +
      'nothing dropped) or `Cascade` (drops everything inside; a long deletion answers with `transaction_id`).',
    tag: 'Namespace',
    access: 'catalog',
    needs: { privilege: 'manage', on: 'namespace', hiddenAnswered: true },
    responses: {
      200: { description: 'Dropped', schema: DropNamespaceResponse },
      204: { description: 'mode Skip and the namespace did not exist (no body)' },
    },
    errors: WITH_CONFLICT,
  })
  @Audited('namespace.drop', (b) => ({ behavior: b.behavior ?? 'Restrict' }))
  async drop(
    @Tenant() t: TenantContext,
    @ObjectId() id: string[],
    @ValidBody(DropNamespaceBody) body: z.output<typeof DropNamespaceBody>,
    @Res({ passthrough: true }) res: FastifyReply,
  ) {
    const result = await this.namespaces.drop(t, id, body.mode, body.behavior);
    if (result === null) res.status(204); // mode Skip on a missing namespace (docs/rest-contract.md §4.3 rule 2)
    return result ?? undefined;
  }
}
