import { Controller, Get, HttpCode, Inject, Param, Post, Query, Req, UseGuards } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { APP_CONFIG, AppConfig } from '../../config/config';
import { assertName } from '../../common/ids';
import { parseBool, resolveLimit } from '../../common/pagination';
import { Delimiter } from '../../common/route-params';
import { Audited } from '../audit/audited.decorator';
import { CatalogAccessGuard } from '../auth/catalog-access.guard';
import { DatabaseThrottlerGuard } from '../throttling/database-throttler.guard';
import { RequiresRole } from '../auth/requires-role.decorator';
import { Tenant, TenantContext } from '../tenancy/tenant-context';
import { TablesService } from '../tables/tables.service';
import { arrowBody } from './dataplane.controller';
import { DataplaneService } from './dataplane.service';

/** The extended edition's routes (docs/rest-contract.md §4.7): list tables, create a table from a streamed Arrow body. */
@Controller('v1/tables')
@UseGuards(CatalogAccessGuard, DatabaseThrottlerGuard)
export class EnterpriseController {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly tables: TablesService,
    private readonly data: DataplaneService,
  ) {}

  /** Like §4.6: every table of the database as full identifiers, keyset-paginated. */
  @Get()
  list(@Tenant() t: TenantContext, @Delimiter() delimiter: string, @Query() q: Record<string, unknown>) {
    return this.tables.listAll(
      t,
      delimiter,
      q.page_token,
      resolveLimit(q.limit, this.config.listDefaultLimit, this.config.listMaxLimit),
      parseBool(q.include_declared, 'include_declared', true),
    );
  }

  /** 201 with the new table; 409 when the name exists; 400 for a bad body; 413 above the limit. */
  @Post(':name')
  @HttpCode(201)
  @RequiresRole('write')
  @Audited('table.create', (_b, r) => ({ version: r?.version ?? null }))
  create(@Tenant() t: TenantContext, @Param('name') name: string, @Req() req: FastifyRequest) {
    assertName(name, 'table name');
    return this.data.createStreamed(t, [name], arrowBody(req), 'spec');
  }
}
