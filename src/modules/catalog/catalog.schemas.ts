import { z } from 'zod';
import { PropertiesSchema } from '../../platform/http/validation/fields';

/**
 * The few schema pieces the catalog's route families share (each sub-folder's *.schemas.ts holds its own bodies and
 * answers). A body field sent as `null` counts as not sent, as in the spec's client models; unknown fields are ignored,
 * as the spec's clients send more than each route reads.
 */
const identity = z.object({ api_key: z.string().nullish(), auth_token: z.string().nullish() }).loose().nullish();

/** The fields every catalog request body may carry: the object's id, the caller's identity and context. */
export const requestBase = { id: z.array(z.string()).nullish(), identity, context: z.record(z.string(), z.string()).nullish() };

/** A body that names only the object (DescribeNamespace, NamespaceExists, TableExists, DeregisterTable, DescribeTransaction). */
export const IdOnlyBody = z.object(requestBase).loose();

/** Properties in an answer (of a namespace, a table). */
export const propertiesField = PropertiesSchema.describe('string-to-string properties');

/** Vended storage options in an answer (DescribeTable, DeclareTable, CreateTable). */
export const storageOptionsField = z
  .record(z.string(), z.string())
  .optional()
  .describe('vended storage options (credential vending): how the client reaches the table data itself; may carry `expires_at_millis`');
