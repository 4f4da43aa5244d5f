import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Patch, Post, Query, UseGuards } from '@nestjs/common';
import { z } from 'zod';
import { APP_CONFIG, AppConfig } from '../../config/config';
import { resolveLimit } from '../../common/pagination';
import { parseBody, PropertiesSchema } from '../../common/request-schemas';
import { Audited } from '../audit/audited.decorator';
import { AdminKeyGuard, DatabaseAdminGuard } from '../auth/admin-key.guard';
import { DatabasesService } from './databases.service';

/** `{limit, window_ms}`: at most `limit` requests per `window_ms` for the whole database; null → the defaults. */
const RateLimitBody = z
  .object({
    limit: z.number().int().positive({ error: 'rate_limit.limit must be a positive integer' }),
    window_ms: z.number().int().positive({ error: 'rate_limit.window_ms must be a positive integer' }).max(86_400_000),
  })
  .nullable()
  .transform((v) => (v ? { limit: v.limit, windowMs: v.window_ms } : null));

const CreateDatabaseBody = z.object({
  name: z.string({ error: 'name is required' }),
  properties: PropertiesSchema.optional(),
  rate_limit: RateLimitBody.optional(),
});
const UpdateDatabaseBody = z
  .object({ properties: PropertiesSchema.optional(), rate_limit: RateLimitBody.optional() })
  .refine((b) => b.properties !== undefined || b.rate_limit !== undefined, { error: 'nothing to change: send properties and/or rate_limit' });
const CreateKeyBody = z.object({
  role: z.enum(['read', 'write', 'admin'], { error: "role must be 'read', 'write' or 'admin'" }),
  description: z.string().max(500).optional(),
  expires_at: z.iso.datetime({ offset: true, error: 'expires_at must be an RFC 3339 date-time' }).optional(),
});

/**
 * The operator API. Databases: the operator key (ADMIN_API_KEY) only. A database's keys and audit trail: the
 * operator, or an `admin` credential of that database.
 */
@Controller('admin/v1/databases')
export class DatabasesController {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly databases: DatabasesService,
  ) {}

  @Post()
  @HttpCode(201)
  @UseGuards(AdminKeyGuard)
  @Audited('database.create')
  create(@Body() raw: unknown) {
    const body = parseBody(CreateDatabaseBody, raw);
    return this.databases.create(body.name, body.properties, body.rate_limit ?? null);
  }

  @Patch(':name')
  @UseGuards(AdminKeyGuard)
  @Audited('database.update', (b) => ({ ...(b.rate_limit !== undefined ? { rate_limit: b.rate_limit } : {}), ...(b.properties ? { properties: Object.keys(b.properties) } : {}) }))
  update(@Param('name') name: string, @Body() raw: unknown) {
    const body = parseBody(UpdateDatabaseBody, raw);
    return this.databases.update(name, { properties: body.properties, rateLimit: body.rate_limit });
  }

  @Get()
  @UseGuards(AdminKeyGuard)
  list(@Query() q: Record<string, unknown>) {
    return this.databases.list(q.page_token, this.limit(q.limit));
  }

  @Get(':name')
  @UseGuards(AdminKeyGuard)
  get(@Param('name') name: string) {
    return this.databases.get(name);
  }

  @Delete(':name')
  @HttpCode(204)
  @UseGuards(AdminKeyGuard)
  @Audited('database.delete')
  async remove(@Param('name') name: string): Promise<void> {
    await this.databases.delete(name);
  }

  @Post(':name/api-keys')
  @HttpCode(201)
  @UseGuards(DatabaseAdminGuard)
  @Audited('api_key.issue', (_body, key: { id: string; role: string }) => ({ key_id: key.id, role: key.role }))
  issueKey(@Param('name') name: string, @Body() raw: unknown) {
    const body = parseBody(CreateKeyBody, raw);
    return this.databases.issueKey(name, body.role, body.description, body.expires_at ? new Date(body.expires_at) : undefined);
  }

  @Get(':name/api-keys')
  @UseGuards(DatabaseAdminGuard)
  listKeys(@Param('name') name: string) {
    return this.databases.listKeys(name);
  }

  @Delete(':name/api-keys/:id')
  @HttpCode(204)
  @UseGuards(DatabaseAdminGuard)
  @Audited('api_key.revoke')
  async revokeKey(@Param('name') name: string, @Param('id') id: string): Promise<void> {
    await this.databases.revokeKey(name, id);
  }

  @Get(':name/audit')
  @UseGuards(DatabaseAdminGuard)
  audit(@Param('name') name: string, @Query() q: Record<string, unknown>) {
    return this.databases.auditTrail(name, q.page_token, this.limit(q.limit));
  }

  private limit(raw: unknown) {
    return resolveLimit(raw, this.config.listDefaultLimit, this.config.listMaxLimit);
  }
}
