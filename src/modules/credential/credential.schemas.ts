import { z } from 'zod';
import { PRIVILEGES, GrantSchema } from '../identity';

/** What the calling credential is and may do on the database it addresses (GET /v1/credential). */
export const CredentialResponse = z
  .object({
    database: z.string().describe('The database the request addressed.'),
    kind: z.enum(['key', 'token', 'operator']).describe('An API key of the database, an OAuth 2.0 token, or the operator key.'),
    actor: z.string().describe('How the audit trail names this credential: `key:<id>`, `token:<sub>` or `operator`. Never a secret.'),
    role: z.enum(['read', 'write', 'admin']).describe("The credential's role (its ceiling)."),
    grants: z
      .array(GrantSchema)
      .nullable()
      .describe('The grants that narrow the role (docs/access-control.md), or null: the role holds on the whole database.'),
    database_privileges: z
      .array(z.enum(PRIVILEGES))
      .describe('The privileges held on the database itself (every table and namespace in it).'),
  })
  .meta({ id: 'CredentialResponse' });
export type CredentialResponse = z.infer<typeof CredentialResponse>;
