import { Body, Controller, Get, HttpCode, Inject, Post, Query, UseGuards } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../../config/config';
import { parseBool, resolveLimit } from '../../common/pagination';
import {
  DeclareTableBody,
  DescribeTableBody,
  IdOnlyBody,
  parseBody,
  RegisterTableBody,
  RenameTableBody,
  StatsBody,
} from '../../common/request-schemas';
import { Delimiter, ObjectId } from '../../common/route-params';
import { Audited } from '../audit/audited.decorator';
import { CatalogAccessGuard } from '../auth/catalog-access.guard';
import { DatabaseThrottlerGuard } from '../throttling/database-throttler.guard';
import { RequiresRole } from '../auth/requires-role.decorator';
import { Tenant, TenantContext } from '../tenancy/tenant-context';
import { TablesService } from './tables.service';

@Controller('v1')
@UseGuards(CatalogAccessGuard, DatabaseThrottlerGuard)
export class TablesController {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly tables: TablesService,
  ) {}

  /** docs/rest-contract.md §4.6: all tables of the database, recursively, keyset-paginated. */
  @Get('table')
  listAll(@Tenant() t: TenantContext, @Delimiter() delimiter: string, @Query() q: Record<string, unknown>) {
    return this.tables.listAll(
      t,
      delimiter,
      q.page_token,
      resolveLimit(q.limit, this.config.listDefaultLimit, this.config.listMaxLimit),
      parseBool(q.include_declared, 'include_declared', true),
    );
  }

  @Post('table/:id/declare')
  @HttpCode(200)
  @RequiresRole('write')
  @Audited('table.declare')
  declare(@Tenant() t: TenantContext, @ObjectId() id: string[], @Body() raw: unknown) {
    return this.tables.declare(t, id, parseBody(DeclareTableBody, raw));
  }

  @Post('table/:id/register')
  @HttpCode(200)
  @RequiresRole('write')
  @Audited('table.register', (b) => ({ location: b.location }))
  register(@Tenant() t: TenantContext, @ObjectId() id: string[], @Body() raw: unknown) {
    return this.tables.register(t, id, parseBody(RegisterTableBody, raw));
  }

  @Post('table/:id/describe')
  @HttpCode(200)
  describe(
    @Tenant() t: TenantContext,
    @ObjectId() id: string[],
    @Body() raw: unknown,
    @Query() q: Record<string, unknown>,
  ) {
    const body = parseBody(DescribeTableBody, raw);
    // A query parameter overrides the body field of the same name.
    return this.tables.describe(t, id, {
      withTableUri: parseBool(q.with_table_uri, 'with_table_uri', body.with_table_uri ?? false),
      loadDetailedMetadata: parseBool(q.load_detailed_metadata, 'load_detailed_metadata', body.load_detailed_metadata ?? false),
      checkDeclared: parseBool(q.check_declared, 'check_declared', body.check_declared ?? false),
      branch: body.branch ?? undefined,
      version: body.version ?? undefined,
    });
  }

  @Post('table/:id/exists')
  @HttpCode(200)
  async exists(@Tenant() t: TenantContext, @ObjectId() id: string[], @Body() raw: unknown): Promise<void> {
    parseBody(IdOnlyBody, raw);
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
  deregister(@Tenant() t: TenantContext, @ObjectId() id: string[], @Body() raw: unknown) {
    parseBody(IdOnlyBody, raw);
    return this.tables.deregister(t, id);
  }

  @Post('table/:id/rename')
  @HttpCode(200)
  @RequiresRole('write')
  @Audited('table.rename', (b) => ({ new_table_name: b.new_table_name, new_namespace_id: b.new_namespace_id ?? null }))
  rename(@Tenant() t: TenantContext, @ObjectId() id: string[], @Body() raw: unknown) {
    const body = parseBody(RenameTableBody, raw);
    return this.tables.rename(t, id, body.new_table_name, body.new_namespace_id ?? body.new_namespace);
  }

  @Get('namespace/:id/table/list')
  listInNamespace(@Tenant() t: TenantContext, @ObjectId() id: string[], @Query() q: Record<string, unknown>) {
    return this.tables.listInNamespace(
      t,
      id,
      q.page_token,
      resolveLimit(q.limit, this.config.listDefaultLimit, this.config.listMaxLimit),
      parseBool(q.include_declared, 'include_declared', true),
    );
  }

  /** The spec says POST; the reference adapter serves GET: both are accepted. */
  @Post('table/:id/stats')
  @HttpCode(200)
  statsPost(@Tenant() t: TenantContext, @ObjectId() id: string[], @Body() raw: unknown, @Query() q: Record<string, unknown>) {
    const body = parseBody(StatsBody, raw);
    return this.tables.stats(t, id, body.branch ?? (typeof q.branch === 'string' ? q.branch : undefined));
  }

  @Get('table/:id/stats')
  statsGet(@Tenant() t: TenantContext, @ObjectId() id: string[], @Query() q: Record<string, unknown>) {
    return this.tables.stats(t, id, typeof q.branch === 'string' ? q.branch : undefined);
  }
}
