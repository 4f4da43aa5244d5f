import { Controller, Delete, Get, HttpCode, Param, Patch, Post, UseGuards } from '@nestjs/common';
import { z } from 'zod';
import { CreateDatabaseBody, CreateKeyBody, UpdateDatabaseBody } from '../../common/request-schemas';
import { PageQuery } from '../../common/validation/fields';
import { ValidBody, ValidQuery } from '../../common/validation/zod-validation.pipe';
import { Audited } from '../audit/audited.decorator';
import { AdminKeyGuard, DatabaseAdminGuard } from '../auth/admin-key.guard';
import { DatabasesService } from './databases.service';

/**
 * The operator API. Databases: the operator key (ADMIN_API_KEY) only. A database's keys and audit trail: the
 * operator, or an `admin` credential of that database.
 */
@Controller('admin/v1/databases')
export class DatabasesController {
  constructor(private readonly databases: DatabasesService) {}

  @Post()
  @HttpCode(201)
  @UseGuards(AdminKeyGuard)
  @Audited('database.create')
  create(@ValidBody(CreateDatabaseBody) body: z.output<typeof CreateDatabaseBody>) {
    return this.databases.create(body.name, body.properties, body.rate_limit ?? null);
  }

  @Patch(':name')
  @UseGuards(AdminKeyGuard)
  @Audited('database.update', (b) => ({ ...(b.rate_limit !== undefined ? { rate_limit: b.rate_limit } : {}), ...(b.properties ? { properties: Object.keys(b.properties) } : {}) }))
  update(@Param('name') name: string, @ValidBody(UpdateDatabaseBody) body: z.output<typeof UpdateDatabaseBody>) {
    return this.databases.update(name, { properties: body.properties, rateLimit: body.rate_limit });
  }

  @Get()
  @UseGuards(AdminKeyGuard)
  list(@ValidQuery(PageQuery) q: z.output<typeof PageQuery>) {
    return this.databases.list(q);
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
  issueKey(@Param('name') name: string, @ValidBody(CreateKeyBody) body: z.output<typeof CreateKeyBody>) {
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
  audit(@Param('name') name: string, @ValidQuery(PageQuery) q: z.output<typeof PageQuery>) {
    return this.databases.auditTrail(name, q);
  }
}
