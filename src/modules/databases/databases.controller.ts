import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Query, UseGuards } from '@nestjs/common';
import { z } from 'zod';
import { APP_CONFIG, AppConfig } from '../../config/config';
import { resolveLimit } from '../../common/pagination';
import { parseBody, PropertiesSchema } from '../../common/request-schemas';
import { AdminKeyGuard } from '../auth/admin-key.guard';
import { DatabasesService } from './databases.service';

const CreateDatabaseBody = z.object({
  name: z.string({ error: 'name is required' }),
  properties: PropertiesSchema.optional(),
});
const CreateKeyBody = z.object({
  role: z.enum(['read', 'write'], { error: "role must be 'read' or 'write'" }),
  description: z.string().max(500).optional(),
});

/** The operator API (ADMIN_API_KEY): databases and their API keys. */
@Controller('admin/v1/databases')
@UseGuards(AdminKeyGuard)
export class DatabasesController {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly databases: DatabasesService,
  ) {}

  @Post()
  @HttpCode(201)
  create(@Body() raw: unknown) {
    const body = parseBody(CreateDatabaseBody, raw);
    return this.databases.create(body.name, body.properties);
  }

  @Get()
  list(@Query() q: Record<string, unknown>) {
    return this.databases.list(q.page_token, resolveLimit(q.limit, this.config.listDefaultLimit, this.config.listMaxLimit));
  }

  @Get(':name')
  get(@Param('name') name: string) {
    return this.databases.get(name);
  }

  @Delete(':name')
  @HttpCode(204)
  async remove(@Param('name') name: string): Promise<void> {
    await this.databases.delete(name);
  }

  @Post(':name/api-keys')
  @HttpCode(201)
  issueKey(@Param('name') name: string, @Body() raw: unknown) {
    const body = parseBody(CreateKeyBody, raw);
    return this.databases.issueKey(name, body.role, body.description);
  }

  @Get(':name/api-keys')
  listKeys(@Param('name') name: string) {
    return this.databases.listKeys(name);
  }

  @Delete(':name/api-keys/:id')
  @HttpCode(204)
  async deleteKey(@Param('name') name: string, @Param('id') id: string): Promise<void> {
    await this.databases.deleteKey(name, id);
  }
}
