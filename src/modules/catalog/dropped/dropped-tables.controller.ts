import { Controller, Get, Param, Post, Req } from '@nestjs/common';
import { z } from 'zod';
import { ObjectId } from '../../../platform/http/route-params';
import { PageQuery } from '../../../platform/http/validation/fields';
import { ValidBody, ValidQuery } from '../../../platform/http/validation/zod-validation.pipe';
import { Audited } from '../../audit';
import { OPERATOR_ERRORS, Operation, WITH_CONFLICT } from '../../../platform/http/operation.decorator';
import { Tenant, TenantContext, quotasOf, rateLimitOf } from '../../identity';
import { DatabasesService } from '../../databases';
import {
  EmptyBody,
  ListDroppedTablesBody,
  ListDroppedTablesResponse,
  ProtectionBody,
  ProtectionResponse,
  PurgeTableResponse,
  UndropTableBody,
  UndropTableResponse,
} from './dropped-tables.schemas';
import { DroppedScope, DroppedTablesService } from './dropped-tables.service';

const DROPPED_ID = { id: { description: "The dropped table's id, as listed." } };
const TENANT_DROPPED_ID = { dropped_id: { description: "The dropped table's id, as listed." } };

const scopeOf = (t: TenantContext): DroppedScope => ({
  database: t.database,
  catalog: t.catalog,
  principal: t.principal,
  requestId: t.requestId,
});

/**
 * Soft-deleted tables of the caller's catalog (docs/soft-delete.md), and the protection flag of tables and
 * namespaces. All need an `admin` credential of the database.
 */
@Controller('v1')
export class DroppedTablesController {
  constructor(private readonly dropped: DroppedTablesService) {}

  @Post('dropped_tables/list')
  @Operation({
    operationId: 'ListDroppedTables',
    summary: 'List dropped tables',
    description: 'Tables dropped under a soft delete profile and not yet purged, newest first; keyset-paginated (`limit`, `page_token`).',
    tag: 'Table',
    access: 'catalog',
    needs: { privilege: 'admin', on: 'database' },
    responses: { 200: { description: 'The dropped tables', schema: ListDroppedTablesResponse } },
    errors: WITH_CONFLICT,
  })
  list(@Tenant() t: TenantContext, @ValidBody(ListDroppedTablesBody) body: z.output<typeof ListDroppedTablesBody>) {
    return this.dropped.list(scopeOf(t), body);
  }

  @Post('dropped_tables/:dropped_id/undrop')
  @Operation({
    operationId: 'UndropTable',
    summary: 'Undrop a table',
    description:
      'Restores a dropped table (rows, versions, tags, indices) under its old identifier, or under `new_name` / ' +
      "`new_namespace`. 409 (code 5) when the name is taken (give a new one); 404 when it was purged or is not this database's.",
    tag: 'Table',
    access: 'catalog',
    needs: { privilege: 'admin', on: 'database' },
    pathParams: TENANT_DROPPED_ID,
    responses: { 200: { description: 'The restored table', schema: UndropTableResponse } },
    errors: WITH_CONFLICT,
  })
  @Audited('table.undrop')
  undrop(@Tenant() t: TenantContext, @Param('dropped_id') id: string, @ValidBody(UndropTableBody) body: z.output<typeof UndropTableBody>) {
    return this.dropped.undrop(scopeOf(t), id, body.new_name, body.new_namespace);
  }

  @Post('dropped_tables/:dropped_id/purge')
  @Operation({
    operationId: 'PurgeDroppedTable',
    summary: 'Purge a dropped table now',
    description: 'Removes a dropped table and its data before its retention ends. Cannot be undone.',
    tag: 'Table',
    access: 'catalog',
    needs: { privilege: 'admin', on: 'database' },
    pathParams: TENANT_DROPPED_ID,
    responses: { 200: { description: 'Purged', schema: PurgeTableResponse } },
    errors: WITH_CONFLICT,
  })
  @Audited('table.purge')
  purge(@Tenant() t: TenantContext, @Param('dropped_id') id: string, @ValidBody(EmptyBody) _body: unknown) {
    return this.dropped.purge(scopeOf(t), id);
  }

  @Post('table/:id/protection')
  @Operation({
    operationId: 'SetTableProtection',
    summary: 'Protect a table from drops, or clear its protection',
    description: 'Sets (or removes) the property `protected=true`: a drop or deregister of a protected table is refused (409, code 19).',
    tag: 'Table',
    access: 'catalog',
    needs: { privilege: 'admin', on: 'database' },
    responses: { 200: { description: "The table's properties", schema: ProtectionResponse } },
    errors: WITH_CONFLICT,
  })
  @Audited('table.protection', (b) => ({ protected: b?.protected ?? null }))
  protectTable(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(ProtectionBody) body: z.output<typeof ProtectionBody>) {
    return this.dropped.protectTable(t, id, body.protected);
  }

  @Post('namespace/:id/protection')
  @Operation({
    operationId: 'SetNamespaceProtection',
    summary: 'Protect a namespace from drops, or clear its protection',
    description:
      'Sets (or removes) the property `protected=true`: a drop of the namespace, or a cascade (or overwrite) that would ' +
      'remove it, is refused whole (409, code 19).',
    tag: 'Namespace',
    access: 'catalog',
    needs: { privilege: 'admin', on: 'database' },
    responses: { 200: { description: "The namespace's properties", schema: ProtectionResponse } },
    errors: WITH_CONFLICT,
  })
  @Audited('namespace.protection', (b) => ({ protected: b?.protected ?? null }))
  protectNamespace(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(ProtectionBody) body: z.output<typeof ProtectionBody>) {
    return this.dropped.protectNamespace(t, id, body.protected);
  }
}

const NAME_AND_ID = { name: { description: 'Database name.' }, ...DROPPED_ID };

/** The operator's view of a database's dropped tables (every catalog): the operator key, or an admin credential of it. */
@Controller('admin/v1/databases')
export class DroppedTablesAdminController {
  constructor(
    private readonly dropped: DroppedTablesService,
    private readonly databases: DatabasesService,
  ) {}

  private async scope(name: string, req: { actor?: string; id?: string }): Promise<DroppedScope> {
    const db = await this.databases.require(name);
    return {
      database: { id: db.id, name: db.name, rateLimit: rateLimitOf(db), quotas: quotasOf(db) },
      principal: req.actor ?? 'operator',
      requestId: req.id,
    };
  }

  @Get(':name/dropped-tables')
  @Operation({
    operationId: 'AdminListDroppedTables',
    summary: "List a database's dropped tables",
    description: 'Every catalog (prefix) of the database; newest first.',
    tag: 'Operator',
    access: 'database-admin',
    pathParams: { name: NAME_AND_ID.name },
    responses: { 200: { description: 'The dropped tables', schema: ListDroppedTablesResponse } },
    errors: OPERATOR_ERRORS,
  })
  async list(
    @Param('name') name: string,
    @ValidQuery(PageQuery) q: z.output<typeof PageQuery>,
    @Req() req: { actor?: string; id?: string },
  ) {
    return this.dropped.list(await this.scope(name, req), q);
  }

  @Post(':name/dropped-tables/:id/undrop')
  @Operation({
    operationId: 'AdminUndropTable',
    summary: 'Undrop a table of a database',
    description: 'As UndropTable, for any catalog of the database.',
    tag: 'Operator',
    access: 'database-admin',
    pathParams: NAME_AND_ID,
    responses: { 200: { description: 'The restored table', schema: UndropTableResponse } },
    errors: [...OPERATOR_ERRORS, 409],
  })
  @Audited('table.undrop')
  async undrop(
    @Param('name') name: string,
    @Param('id') id: string,
    @ValidBody(UndropTableBody) body: z.output<typeof UndropTableBody>,
    @Req() req: { actor?: string; id?: string },
  ) {
    return this.dropped.undrop(await this.scope(name, req), id, body.new_name, body.new_namespace);
  }

  @Post(':name/dropped-tables/:id/purge')
  @Operation({
    operationId: 'AdminPurgeDroppedTable',
    summary: 'Purge a dropped table of a database now',
    description: 'As PurgeDroppedTable, for any catalog of the database.',
    tag: 'Operator',
    access: 'database-admin',
    pathParams: NAME_AND_ID,
    responses: { 200: { description: 'Purged', schema: PurgeTableResponse } },
    errors: [...OPERATOR_ERRORS, 409],
  })
  @Audited('table.purge')
  async purge(@Param('name') name: string, @Param('id') id: string, @Req() req: { actor?: string; id?: string }) {
    return this.dropped.purge(await this.scope(name, req), id);
  }
}
