import { z } from 'zod';
import { mode, PageQuery, PropertiesSchema } from '../../../platform/http/validation/fields';
import { propertiesField as props, requestBase } from '../catalog.schemas';

/**
 * Bodies, query and answers of the namespace routes: the bodies are applied by ZodValidationPipe (@ValidBody,
 * @ValidQuery), the answers are the types the service returns, and the OpenAPI document shows both.
 */
export const CreateNamespaceBody = z
  .object({
    ...requestBase,
    mode: mode(['Create', 'ExistOk', 'Overwrite'], 'Create'),
    properties: PropertiesSchema.nullish().transform((v) => v ?? undefined),
  })
  .loose();
export const DropNamespaceBody = z
  .object({
    ...requestBase,
    mode: mode(['Fail', 'Skip'], 'Fail'),
    behavior: mode(['Restrict', 'Cascade'], 'Restrict'),
  })
  .loose();
export const ListNamespacesQuery = PageQuery;

export const CreateNamespaceResponse = z
  .object({
    properties: props.describe('the stored properties, with `created_at` (RFC 3339) added by the gateway unless given'),
  })
  .meta({ id: 'CreateNamespaceResponse' });
export type CreateNamespaceResponse = z.infer<typeof CreateNamespaceResponse>;
export const ListNamespacesResponse = z
  .object({
    namespaces: z.array(z.string()).describe('names of the direct children (last segment only), sorted'),
    page_token: z.string().optional().describe('present when there are more results: pass it back as `page_token`'),
  })
  .meta({ id: 'ListNamespacesResponse' });
export type ListNamespacesResponse = z.infer<typeof ListNamespacesResponse>;
export const DescribeNamespaceResponse = z
  .object({
    properties: props.describe('the stored properties, with `created_at` (RFC 3339); `{}` for the root namespace'),
  })
  .meta({ id: 'DescribeNamespaceResponse' });
export type DescribeNamespaceResponse = z.infer<typeof DescribeNamespaceResponse>;
export const DropNamespaceResponse = z
  .object({
    properties: props,
    transaction_id: z
      .array(z.string())
      .optional()
      .describe('present when a cascade drop continues in the background: poll it with DescribeTransaction'),
  })
  .meta({ id: 'DropNamespaceResponse' });
export type DropNamespaceResponse = z.infer<typeof DropNamespaceResponse>;
