import { Controller, Get, HttpCode, Post, UseGuards } from '@nestjs/common';
import { z } from 'zod';
import {
  DeclareTableBody,
  DescribeTableBody,
  DescribeTableQuery,
  IdOnlyBody,
  ListTablesQuery,
  RegisterTableBody,
  RenameTableBody,
  StatsBody,
  StatsQuery,
} from '../../common/request-schemas';
import { Delimiter, ObjectId } from '../../common/route-params';
import { ValidBody, ValidQuery } from '../../common/validation/zod-validation.pipe';
import { Audited } from '../audit/audited.decorator';
import { CatalogAccessGuard } from '../auth/catalog-access.guard';
import { DatabaseThrottlerGuard } from '../throttling/database-throttler.guard';
import { RequiresRole } from '../auth/requires-role.decorator';
import { Tenant, TenantContext } from '../tenancy/tenant-context';
import { TablesService } from './tables.service';

@Controller('v1')
@UseGuards(CatalogAccessGuard, DatabaseThrottlerGuard)
export class TablesController {
  constructor(private readonly tables: TablesService) {}

  /** docs/rest-contract.md §4.6: all tables of the database, recursively, keyset-paginated. */
  @Get('table')
  listAll(@Tenant() t: TenantContext, @Delimiter() delimiter: string, @ValidQuery(ListTablesQuery) q: z.output<typeof ListTablesQuery>) {
    return this.tables.listAll(t, delimiter, q, q.include_declared);
  }

  @Post('table/:id/declare')
  @HttpCode(200)
  @RequiresRole('write')
  @Audited('table.declare')
  declare(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(DeclareTableBody) body: z.output<typeof DeclareTableBody>) {
    return this.tables.declare(t, id, body);
  }

  @Post('table/:id/register')
  @HttpCode(200)
  @RequiresRole('write')
  @Audited('table.register', (b) => ({ location: b.location }))
  register(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(RegisterTableBody) body: z.output<typeof RegisterTableBody>) {
    return this.tables.register(t, id, body);
  }

  @Post('table/:id/describe')
  @HttpCode(200)
  describe(
    @Tenant() t: TenantContext,
    @ObjectId() id: string[],
    @ValidBody(DescribeTableBody) body: z.output<typeof DescribeTableBody>,
    @ValidQuery(DescribeTableQuery) q: z.output<typeof DescribeTableQuery>,
  ) {
    // A query parameter overrides the body field of the same name.
    return this.tables.describe(t, id, {
      withTableUri: q.with_table_uri ?? body.with_table_uri ?? false,
      loadDetailedMetadata: q.load_detailed_metadata ?? body.load_detailed_metadata ?? false,
      checkDeclared: q.check_declared ?? body.check_declared ?? false,
      branch: body.branch ?? undefined,
      version: body.version ?? undefined,
    });
  }

  @Post('table/:id/exists')
  @HttpCode(200)
  async exists(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(IdOnlyBody) _body: unknown): Promise<void> {
    await this.tables.get(t, id);
  }

  @Post('table/:id/drop')
  @HttpCode(200)
  @RequiresRole('write')
  @Audited('table.drop')
  drop(@Tenant() t: TenantContext, @ObjectId() id: string[]) {
    return this.tables.drop(t, id); // the spec defines no body; the official client sends one anyway: ignored
  }

  @Post('table/:id/deregister')
  @HttpCode(200)
  @RequiresRole('write')
  @Audited('table.deregister')
  deregister(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(IdOnlyBody) _body: unknown) {
    return this.tables.deregister(t, id);
  }

  @Post('table/:id/rename')
  @HttpCode(200)
  @RequiresRole('write')
  @Audited('table.rename', (b) => ({ new_table_name: b.new_table_name, new_namespace_id: b.new_namespace_id ?? null }))
  rename(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(RenameTableBody) body: z.output<typeof RenameTableBody>) {
    return this.tables.rename(t, id, body.new_table_name, body.new_namespace_id ?? body.new_namespace);
  }

  @Get('namespace/:id/table/list')
  listInNamespace(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidQuery(ListTablesQuery) q: z.output<typeof ListTablesQuery>) {
    return this.tables.listInNamespace(t, id, q, q.include_declared);
  }

  /** The spec says POST; the reference adapter serves GET: both are accepted. */
  @Post('table/:id/stats')
  @HttpCode(200)
  statsPost(
    @Tenant() t: TenantContext,
    @ObjectId() id: string[],
    @ValidBody(StatsBody) body: z.output<typeof StatsBody>,
    @ValidQuery(StatsQuery) q: z.output<typeof StatsQuery>,
  ) {
    return this.tables.stats(t, id, body.branch ?? q.branch);
  }

  @Get('table/:id/stats')
  statsGet(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidQuery(StatsQuery) q: z.output<typeof StatsQuery>) {
    return this.tables.stats(t, id, q.branch);
  }
}
