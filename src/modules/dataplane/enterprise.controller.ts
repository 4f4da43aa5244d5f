import { Controller, Get, HttpCode, Param, Post, Req, UseGuards } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import { assertName } from '../../common/ids';
import { ListTablesQuery } from '../../common/request-schemas';
import { Delimiter } from '../../common/route-params';
import { ValidQuery } from '../../common/validation/zod-validation.pipe';
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
    private readonly tables: TablesService,
    private readonly data: DataplaneService,
  ) {}

  /** Like §4.6: every table of the database as full identifiers, keyset-paginated. */
  @Get()
  list(@Tenant() t: TenantContext, @Delimiter() delimiter: string, @ValidQuery(ListTablesQuery) q: z.output<typeof ListTablesQuery>) {
    return this.tables.listAll(t, delimiter, q, q.include_declared);
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
