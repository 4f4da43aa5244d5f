import { Controller, Get, Post, Req } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import { dialectOf, schemaDialectOf } from '../../../engine/arrow/dialect';
import { IdOnlyBody } from '../catalog.schemas';
import {
  DeclareTableBody,
  DeclareTableResponse,
  DeregisterTableResponse,
  DescribeTableBody,
  DescribeTableQuery,
  DescribeTableResponse,
  DropTableResponse,
  GetTableStatsResponse,
  ListNamespaceTablesQuery,
  ListTablesQuery,
  ListTablesResponse,
  RegisterTableBody,
  RegisterTableResponse,
  RenameTableBody,
  RenameTableResponse,
  StatsBody,
  StatsQuery,
} from './tables.schemas';
import { Delimiter, ObjectId } from '../../../platform/http/route-params';
import { ValidBody, ValidQuery } from '../../../platform/http/validation/zod-validation.pipe';
import { Audited } from '../../audit';
import { CATALOG_ERRORS, Operation, WITH_CONFLICT } from '../../../platform/http/operation.decorator';
import { Tenant, TenantContext } from '../../identity';
import { TablesService } from './tables.service';

@Controller('v1')
export class TablesController {
  constructor(private readonly tables: TablesService) {}

  /** docs/rest-contract.md §4.6: all tables of the database, recursively, keyset-paginated. */
  @Get('table')
  @Operation({
    operationId: 'ListAllTables',
    summary: 'List all tables',
    description: 'Every table of the database, in every namespace, as full identifiers joined by `delimiter`; keyset-paginated.',
    tag: 'Table',
    access: 'catalog',
    needs: { privilege: 'describe', on: 'listing' },
    responses: { 200: { description: 'Table identifiers', schema: ListTablesResponse } },
    errors: CATALOG_ERRORS,
  })
  listAll(@Tenant() t: TenantContext, @Delimiter() delimiter: string, @ValidQuery(ListTablesQuery) q: z.output<typeof ListTablesQuery>) {
    return this.tables.listAll(t, delimiter, q, q.include_declared);
  }

  @Post('table/:id/declare')
  @Operation({
    operationId: 'DeclareTable',
    summary: 'Declare a table',
    description:
      'Creates the catalog entry and an empty folder the client writes the Lance data to (`location`). The server ' +
      'chooses the location: a different `location` in the body → 400.',
    tag: 'Table',
    access: 'catalog',
    needs: { privilege: 'create', on: 'table', creates: true },
    responses: { 200: { description: 'The declared table', schema: DeclareTableResponse } },
    errors: WITH_CONFLICT,
  })
  @Audited('table.declare')
  declare(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(DeclareTableBody) body: z.output<typeof DeclareTableBody>) {
    return this.tables.declare(t, id, body);
  }

  @Post('table/:id/register')
  @Operation({
    operationId: 'RegisterTable',
    summary: 'Register a table to a namespace',
    description:
      "Registers existing Lance data under a name. `location` is relative to the database's folder (no `..`, no " +
      'absolute paths or URIs). `mode` `Create` (409 if the name exists) or `Overwrite`. Answers the `location` as given.',
    tag: 'Table',
    access: 'catalog',
    needs: { privilege: 'create', on: 'table', creates: true },
    responses: { 200: { description: 'The registered table', schema: RegisterTableResponse } },
    errors: WITH_CONFLICT,
  })
  @Audited('table.register', (b) => ({ location: b.location }))
  register(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(RegisterTableBody) body: z.output<typeof RegisterTableBody>) {
    return this.tables.register(t, id, body);
  }

  @Post('table/:id/describe')
  @Operation({
    operationId: 'DescribeTable',
    summary: 'Describe information of a table',
    description:
      'A query parameter overrides the body field of the same name. `schema` spells Arrow types as the asking ' +
      "client reads them: the Lance Namespace converters' names (`utf8`, `float32`, …), or Lance's own " +
      '(`string`, `float`, …) for the official remote client.',
    tag: 'Table',
    access: 'catalog',
    needs: { privilege: 'describe', on: 'table' },
    responses: { 200: { description: 'The table', schema: DescribeTableResponse } },
    errors: CATALOG_ERRORS,
  })
  describe(
    @Tenant() t: TenantContext,
    @ObjectId() id: string[],
    @ValidBody(DescribeTableBody) body: z.output<typeof DescribeTableBody>,
    @ValidQuery(DescribeTableQuery) q: z.output<typeof DescribeTableQuery>,
    @Req() req: FastifyRequest,
  ) {
    // A query parameter overrides the body field of the same name.
    return this.tables.describe(t, id, {
      withTableUri: q.with_table_uri ?? body.with_table_uri ?? false,
      loadDetailedMetadata: q.load_detailed_metadata ?? body.load_detailed_metadata ?? false,
      checkDeclared: q.check_declared ?? body.check_declared ?? false,
      branch: body.branch ?? undefined,
      version: body.version ?? undefined,
      tag: body.tag ?? undefined,
      schemaDialect: schemaDialectOf(dialectOf(req)),
      vendCredentials: body.vend_credentials,
    });
  }

  @Post('table/:id/exists')
  @Operation({
    operationId: 'TableExists',
    summary: 'Check if a table exists',
    description: '200 with no body when it exists (declared tables too), 404 (code 4, or 1 for a missing namespace) when not.',
    tag: 'Table',
    access: 'catalog',
    needs: { privilege: 'describe', on: 'table' },
    responses: { 200: { description: 'It exists (no body)' } },
    errors: CATALOG_ERRORS,
  })
  async exists(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(IdOnlyBody) _body: unknown): Promise<void> {
    await this.tables.get(t, id);
  }

  @Post('table/:id/drop')
  @Operation({
    operationId: 'DropTable',
    summary: 'Drop a table',
    description:
      "Removes the table. Under the database's hard delete profile its data is deleted; under a soft one it is kept until " +
      'the retention ends (undrop, docs/soft-delete.md). 409 (code 19) for a protected table. A request body is ignored.',
    tag: 'Table',
    access: 'catalog',
    needs: { privilege: 'manage', on: 'table' },
    responses: { 200: { description: 'The dropped table', schema: DropTableResponse } },
    errors: WITH_CONFLICT,
  })
  @Audited('table.drop')
  drop(@Tenant() t: TenantContext, @ObjectId() id: string[]) {
    return this.tables.drop(t, id); // the spec defines no body; the official client sends one anyway: ignored
  }

  @Post('table/:id/deregister')
  @Operation({
    operationId: 'DeregisterTable',
    summary: 'Deregister a table',
    description: 'Removes the table from the catalog and keeps its data (it can be registered again). 409 (code 19) for a protected table.',
    tag: 'Table',
    access: 'catalog',
    needs: { privilege: 'manage', on: 'table' },
    responses: { 200: { description: 'The deregistered table', schema: DeregisterTableResponse } },
    errors: WITH_CONFLICT,
  })
  @Audited('table.deregister')
  deregister(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(IdOnlyBody) _body: unknown) {
    return this.tables.deregister(t, id);
  }

  @Post('table/:id/rename')
  @Operation({
    operationId: 'RenameTable',
    summary: 'Rename a table',
    description: 'Renames in the catalog (across namespaces too with `new_namespace_id`); the data stays in place.',
    tag: 'Table',
    access: 'catalog',
    needs: { privilege: 'manage', on: 'table' },
    responses: { 200: { description: 'Renamed (an empty object)', schema: RenameTableResponse } },
    errors: WITH_CONFLICT,
  })
  @Audited('table.rename', (b) => ({ new_table_name: b.new_table_name, new_namespace_id: b.new_namespace_id ?? null }))
  rename(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(RenameTableBody) body: z.output<typeof RenameTableBody>) {
    return this.tables.rename(t, id, body.new_table_name, body.new_namespace_id ?? body.new_namespace);
  }

  @Get('namespace/:id/table/list')
  @Operation({
    operationId: 'ListTables',
    summary: 'List tables in a namespace',
    description: 'Tables directly in namespace `{id}`, by name, sorted and paginated.',
    tag: 'Table',
    access: 'catalog',
    needs: { privilege: 'describe', on: 'namespace' },
    responses: { 200: { description: 'Table names', schema: ListTablesResponse } },
    errors: CATALOG_ERRORS,
  })
  listInNamespace(
    @Tenant() t: TenantContext,
    @ObjectId() id: string[],
    @ValidQuery(ListNamespaceTablesQuery) q: z.output<typeof ListNamespaceTablesQuery>,
  ) {
    return this.tables.listInNamespace(t, id, q, q.include_declared, q.prefix);
  }

  /** The spec says POST; the reference adapter serves GET: both are accepted. */
  @Post('table/:id/stats')
  @Operation({
    operationId: 'GetTableStats',
    summary: 'Get table statistics',
    description: "Read from the table's data. `branch` from the body, or else from the query.",
    tag: 'Table',
    access: 'catalog',
    needs: { privilege: 'select', on: 'table' },
    responses: { 200: { description: 'Statistics', schema: GetTableStatsResponse } },
    errors: CATALOG_ERRORS,
  })
  statsPost(
    @Tenant() t: TenantContext,
    @ObjectId() id: string[],
    @ValidBody(StatsBody) body: z.output<typeof StatsBody>,
    @ValidQuery(StatsQuery) q: z.output<typeof StatsQuery>,
  ) {
    return this.tables.stats(t, id, body.branch ?? q.branch);
  }

  @Get('table/:id/stats')
  @Operation({
    operationId: 'GetTableStatsWithGet',
    summary: 'Get table statistics (GET)',
    description: 'GetTableStats as the reference adapter serves it (GET, no body).',
    tag: 'Table',
    access: 'catalog',
    needs: { privilege: 'select', on: 'table' },
    responses: { 200: { description: 'Statistics', schema: GetTableStatsResponse } },
    errors: CATALOG_ERRORS,
  })
  statsGet(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidQuery(StatsQuery) q: z.output<typeof StatsQuery>) {
    return this.tables.stats(t, id, q.branch);
  }
}
