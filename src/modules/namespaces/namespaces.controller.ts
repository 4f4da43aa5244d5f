import { Controller, Get, HttpCode, Post, Res, UseGuards } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import { CreateNamespaceBody, DropNamespaceBody, IdOnlyBody, ListNamespacesQuery } from '../../common/request-schemas';
import { ObjectId } from '../../common/route-params';
import { ValidBody, ValidQuery } from '../../common/validation/zod-validation.pipe';
import { Audited } from '../audit/audited.decorator';
import { CatalogAccessGuard } from '../auth/catalog-access.guard';
import { DatabaseThrottlerGuard } from '../throttling/database-throttler.guard';
import { RequiresRole } from '../auth/requires-role.decorator';
import { Tenant, TenantContext } from '../tenancy/tenant-context';
import { NamespacesService } from './namespaces.service';

@Controller('v1/namespace/:id')
@UseGuards(CatalogAccessGuard, DatabaseThrottlerGuard)
export class NamespacesController {
  constructor(private readonly namespaces: NamespacesService) {}

  @Post('create')
  @HttpCode(200)
  @RequiresRole('write')
  @Audited('namespace.create', (b) => ({ mode: b.mode ?? 'Create' }))
  create(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(CreateNamespaceBody) body: z.output<typeof CreateNamespaceBody>) {
    return this.namespaces.create(t, id, body.mode, body.properties);
  }

  @Get('list')
  list(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidQuery(ListNamespacesQuery) q: z.output<typeof ListNamespacesQuery>) {
    return this.namespaces.list(t, id, q);
  }

  @Post('describe')
  @HttpCode(200)
  describe(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(IdOnlyBody) _body: unknown) {
    return this.namespaces.describe(t, id);
  }

  @Post('exists')
  @HttpCode(200)
  async exists(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(IdOnlyBody) _body: unknown): Promise<void> {
    await this.namespaces.assertExists(t, id);
  }

  @Post('drop')
  @HttpCode(200)
  @RequiresRole('write')
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
