import { Controller, Delete, Get, Param, Patch, Post } from '@nestjs/common';
import { z } from 'zod';
import {
  CreateDatabaseBody,
  CreateKeyBody,
  keyChangeOf,
  keyOptionsOf,
  ApiKey,
  RotateKeyBody,
  UpdateKeyBody,
  UpdateDatabaseBody,
  Database,
  IssuedApiKey,
  ListApiKeysResponse,
  ListDatabasesResponse,
} from './databases.schemas';
import { AuditQuery, AuditTrailResponse, Audited } from '../audit';
import { PageQuery } from '../../platform/http/validation/fields';
import { ValidBody, ValidQuery } from '../../platform/http/validation/zod-validation.pipe';
import { Operation, OPERATOR_ERRORS } from '../../platform/http/operation.decorator';
import { DatabasesService } from './databases.service';

const NAME = { name: { description: 'Database name.' } };
const KEY_ID = { ...NAME, id: { description: 'Key id (as issued / listed).' } };

/** Network rules as the audit trail shows them: as the operator sent them (validated by then). */
const auditedRules = (n: unknown) => (n === undefined ? {} : { network_rules: n });

/**
 * The operator API. Databases: the operator key (ADMIN_API_KEY) only. A database's keys and audit trail: the
 * operator, or an `admin` credential of that database.
 */
@Controller('admin/v1/databases')
export class DatabasesController {
  constructor(private readonly databases: DatabasesService) {}

  @Post()
  @Operation({
    operationId: 'CreateDatabase',
    summary: 'Create a database (tenant)',
    tag: 'Operator',
    access: 'operator',
    responses: { 201: { description: 'Created', schema: Database } },
    errors: [400, 401, 403, 409, 503, '5XX'],
  })
  @Audited('database.create', (b) => auditedRules(b.network_rules))
  create(@ValidBody(CreateDatabaseBody) body: z.output<typeof CreateDatabaseBody>) {
    return this.databases.create(
      body.name,
      body.properties,
      body.rate_limit ?? null,
      body.storage_profile,
      body.managed_versioning ?? false,
      body.quotas,
      body.network_rules,
    );
  }

  @Patch(':name')
  @Operation({
    operationId: 'UpdateDatabase',
    summary: "Change a database's properties, rate limit, storage profile, quotas or network rules",
    description: 'A changed rate limit, quota or network rule applies on every replica within AUTH_CACHE_SYNC_MS (1 s by default).',
    tag: 'Operator',
    access: 'operator',
    pathParams: NAME,
    responses: { 200: { description: 'The database', schema: Database } },
    errors: OPERATOR_ERRORS,
  })
  @Audited('database.update', (b) => ({
    ...(b.quotas !== undefined ? { quotas: b.quotas } : {}),
    ...(b.managed_versioning !== undefined ? { managed_versioning: b.managed_versioning } : {}),
    ...(b.storage_profile !== undefined ? { storage_profile: b.storage_profile } : {}),
    ...(b.rate_limit !== undefined ? { rate_limit: b.rate_limit } : {}),
    ...(b.properties ? { properties: Object.keys(b.properties) } : {}),
    ...(b.drop_profile !== undefined ? { drop_profile: b.drop_profile } : {}),
    ...(b.drop_retention_seconds !== undefined ? { drop_retention_seconds: b.drop_retention_seconds } : {}),
    ...(b.protected !== undefined ? { protected: b.protected } : {}),
    ...auditedRules(b.network_rules),
  }))
  update(@Param('name') name: string, @ValidBody(UpdateDatabaseBody) body: z.output<typeof UpdateDatabaseBody>) {
    return this.databases.update(name, {
      properties: body.properties,
      rateLimit: body.rate_limit,
      storageProfile: body.storage_profile,
      managedVersioning: body.managed_versioning,
      quotas: body.quotas,
      dropProfile: body.drop_profile,
      dropRetentionSeconds: body.drop_retention_seconds,
      protected: body.protected,
      allowedCidrs: body.network_rules?.allowedCidrs,
      privateOnly: body.network_rules?.privateOnly,
    });
  }

  @Get()
  @Operation({
    operationId: 'ListDatabases',
    summary: 'List databases',
    tag: 'Operator',
    access: 'operator',
    responses: { 200: { description: 'Databases, by name', schema: ListDatabasesResponse } },
    errors: [400, 401, 403, 503, '5XX'],
  })
  list(@ValidQuery(PageQuery) q: z.output<typeof PageQuery>) {
    return this.databases.list(q);
  }

  @Get(':name')
  @Operation({
    operationId: 'DescribeDatabase',
    summary: 'Describe a database',
    tag: 'Operator',
    access: 'operator',
    pathParams: NAME,
    responses: { 200: { description: 'The database', schema: Database } },
    errors: OPERATOR_ERRORS,
  })
  get(@Param('name') name: string) {
    return this.databases.get(name);
  }

  @Delete(':name')
  @Operation({
    operationId: 'DeleteDatabase',
    summary: 'Delete a database',
    description:
      'Removes its catalog, API keys and storage folder, dropped tables included (final: no soft delete). 409 while it is protected.',
    tag: 'Operator',
    access: 'operator',
    pathParams: NAME,
    responses: { 204: { description: 'Deleted (no body)' } },
    errors: [...OPERATOR_ERRORS, 409],
  })
  @Audited('database.delete')
  async remove(@Param('name') name: string): Promise<void> {
    await this.databases.delete(name);
  }

  @Post(':name/api-keys')
  @Operation({
    operationId: 'CreateApiKey',
    summary: 'Issue an API key',
    description:
      'The secret (`api_key`) is shown only in this answer. `grants` narrow the role to privileges on namespaces and tables ' +
      '(docs/access-control.md); a grant above the role is a 400.',
    tag: 'Operator',
    access: 'database-admin',
    pathParams: NAME,
    responses: { 201: { description: 'Issued', schema: IssuedApiKey } },
    errors: OPERATOR_ERRORS,
  })
  @Audited('api_key.issue')
  issueKey(@Param('name') name: string, @ValidBody(CreateKeyBody) body: z.output<typeof CreateKeyBody>) {
    return this.databases.issueKey(name, body.role, keyOptionsOf(body));
  }

  @Post(':name/api-keys/:id/rotate')
  @Operation({
    operationId: 'RotateApiKey',
    summary: 'Rotate an API key',
    description:
      'Issues a new key (new id and secret, shown only in this answer) with the same role, grants, name, owner, expiry and rate limit, ' +
      '`rotated_from` the old one. The old key stays valid until it is revoked; with `overlap_seconds`, it expires that many ' +
      'seconds from now unless it expires sooner. A revoked or expired key cannot be rotated (409).',
    tag: 'Operator',
    access: 'database-admin',
    pathParams: KEY_ID,
    responses: { 201: { description: 'The new key', schema: IssuedApiKey } },
    errors: [...OPERATOR_ERRORS, 409],
  })
  @Audited('api_key.rotate')
  rotateKey(@Param('name') name: string, @Param('id') id: string, @ValidBody(RotateKeyBody) body: z.output<typeof RotateKeyBody>) {
    return this.databases.rotateKey(name, id, body.overlap_seconds);
  }

  @Patch(':name/api-keys/:id')
  @Operation({
    operationId: 'UpdateApiKey',
    summary: "Change an API key's name, owner, expiry, rate limit or grants",
    description:
      'Applies at once on this replica, within AUTH_CACHE_SYNC_MS (1 s by default) on every other. Unknown fields are a 400, and so are grants ' +
      "above the key's role.",
    tag: 'Operator',
    access: 'database-admin',
    pathParams: KEY_ID,
    responses: { 200: { description: 'The key (never its secret)', schema: ApiKey } },
    errors: OPERATOR_ERRORS,
  })
  @Audited('api_key.update')
  updateKey(@Param('name') name: string, @Param('id') id: string, @ValidBody(UpdateKeyBody) body: z.output<typeof UpdateKeyBody>) {
    return this.databases.updateKey(name, id, keyChangeOf(body));
  }

  @Get(':name/api-keys')
  @Operation({
    operationId: 'ListApiKeys',
    summary: "List a database's API keys",
    description: 'Revoked keys stay listed, with `revoked_at`. Never the secrets.',
    tag: 'Operator',
    access: 'database-admin',
    pathParams: NAME,
    responses: { 200: { description: 'The keys', schema: ListApiKeysResponse } },
    errors: OPERATOR_ERRORS,
  })
  listKeys(@Param('name') name: string) {
    return this.databases.listKeys(name);
  }

  @Delete(':name/api-keys/:id')
  @Operation({
    operationId: 'RevokeApiKey',
    summary: 'Revoke an API key',
    description: 'Refused at once on this replica, within AUTH_CACHE_SYNC_MS (1 s by default) on every other.',
    tag: 'Operator',
    access: 'database-admin',
    pathParams: KEY_ID,
    responses: { 204: { description: 'Revoked (no body)' } },
    errors: OPERATOR_ERRORS,
  })
  @Audited('api_key.revoke')
  async revokeKey(@Param('name') name: string, @Param('id') id: string): Promise<void> {
    await this.databases.revokeKey(name, id);
  }

  @Get(':name/audit')
  @Operation({
    operationId: 'ListAuditEvents',
    summary: 'Audit trail of a database',
    description:
      'Who created, dropped or renamed what, and when; newest first. Optional filters (combined with AND): `action` ' +
      '(exact, or a prefix ending in `.`), `actor` and `target` (exact); pages stay within the filter.',
    tag: 'Operator',
    access: 'database-admin',
    pathParams: NAME,
    responses: { 200: { description: 'Events', schema: AuditTrailResponse } },
    errors: OPERATOR_ERRORS,
  })
  audit(@Param('name') name: string, @ValidQuery(AuditQuery) q: AuditQuery) {
    return this.databases.auditTrail(name, q);
  }
}
