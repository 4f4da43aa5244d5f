import { Body, Controller, Get, HttpCode, Inject, Post, Query, Res, UseGuards } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { APP_CONFIG, AppConfig } from '../../config/config';
import { resolveLimit } from '../../common/pagination';
import { CreateNamespaceBody, DropNamespaceBody, IdOnlyBody, parseBody } from '../../common/request-schemas';
import { ObjectId } from '../../common/route-params';
import { Audited } from '../audit/audited.decorator';
import { CatalogAccessGuard } from '../auth/catalog-access.guard';
import { DatabaseThrottlerGuard } from '../throttling/database-throttler.guard';
import { RequiresRole } from '../auth/requires-role.decorator';
import { Tenant, TenantContext } from '../tenancy/tenant-context';
import { NamespacesService } from './namespaces.service';

@Controller('v1/namespace/:id')
@UseGuards(CatalogAccessGuard, DatabaseThrottlerGuard)
export class NamespacesController {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly namespaces: NamespacesService,
  ) {}

  @Post('create')
  @HttpCode(200)
  @RequiresRole('write')
  @Audited('namespace.create', (b) => ({ mode: b.mode ?? 'Create' }))
  create(@Tenant() t: TenantContext, @ObjectId() id: string[], @Body() raw: unknown) {
    const body = parseBody(CreateNamespaceBody, raw);
    return this.namespaces.create(t, id, body.mode, body.properties);
  }

  @Get('list')
  list(@Tenant() t: TenantContext, @ObjectId() id: string[], @Query() q: Record<string, unknown>) {
    return this.namespaces.list(t, id, q.page_token, this.limit(q.limit));
  }

  @Post('describe')
  @HttpCode(200)
  describe(@Tenant() t: TenantContext, @ObjectId() id: string[], @Body() raw: unknown) {
    parseBody(IdOnlyBody, raw);
    return this.namespaces.describe(t, id);
  }

  @Post('exists')
  @HttpCode(200)
  async exists(@Tenant() t: TenantContext, @ObjectId() id: string[], @Body() raw: unknown): Promise<void> {
    parseBody(IdOnlyBody, raw);
    await this.namespaces.assertExists(t, id);
  }

  @Post('drop')
  @HttpCode(200)
  @RequiresRole('write')
  @Audited('namespace.drop', (b) => ({ behavior: b.behavior ?? 'Restrict' }))
  async drop(
    @Tenant() t: TenantContext,
    @ObjectId() id: string[],
    @Body() raw: unknown,
    @Res({ passthrough: true }) res: FastifyReply,
  ) {
    const body = parseBody(DropNamespaceBody, raw);
    const result = await this.namespaces.drop(t, id, body.mode, body.behavior);
    if (result === null) res.status(204); // mode Skip on a missing namespace (docs/rest-contract.md §4.3 rule 2)
    return result ?? undefined;
  }

  private limit(raw: unknown) {
    return resolveLimit(raw, this.config.listDefaultLimit, this.config.listMaxLimit);
  }
}
