import { Controller, Get } from '@nestjs/common';
import { CATALOG_ERRORS, Operation } from '../../platform/http/operation.decorator';
import { PRIVILEGES } from '../identity';
import { Tenant, TenantContext } from '../identity';
import { CredentialResponse } from './credential.schemas';

/**
 * "Who am I": the calling credential's role and grants on the database it addresses, so a client (the console) shows
 * only what the credential may do instead of offering actions that fail. Needs only to be valid for the database.
 */
@Controller('v1')
export class CredentialController {
  @Get('credential')
  @Operation({
    operationId: 'DescribeCredential',
    summary: 'Describe the calling credential',
    description:
      "The calling credential's kind, role and grants on the database the request addresses (Enterprise extension). " +
      'Never shows a secret.',
    tag: 'Enterprise',
    access: 'catalog',
    needs: { privilege: 'describe', on: 'listing' },
    responses: { 200: { description: 'The credential', schema: CredentialResponse } },
    errors: CATALOG_ERRORS,
  })
  describe(@Tenant() t: TenantContext): CredentialResponse {
    const actor = t.principal;
    return {
      database: t.database.name,
      kind: actor === 'operator' ? 'operator' : actor.startsWith('token:') ? 'token' : 'key',
      actor,
      role: t.access.role,
      grants: t.access.grantList(),
      database_privileges: PRIVILEGES.filter((p) => t.access.onDatabaseHas(p)),
    };
  }
}
