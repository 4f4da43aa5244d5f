import { z } from 'zod';
import { PageQuery } from '../../../platform/http/validation/fields';

const base = { identity: z.unknown().optional(), context: z.unknown().optional() };

/** The body of POST /v1/dropped_tables/list. */
export const ListDroppedTablesBody = z.object({ ...base, ...PageQuery.shape }).loose();

/** Undrop: to the old identifier, or under a new name and/or namespace (needed when the old name was taken since). */
export const UndropTableBody = z
  .object({
    ...base,
    new_name: z.string().min(1).optional().describe('the name to restore the table under; absent: its old name'),
    new_namespace: z.array(z.string().min(1)).optional().describe('the namespace to restore it into; absent: its old namespace'),
  })
  .loose();

export const EmptyBody = z.object({ ...base }).loose();

export const ProtectionBody = z
  .object({
    ...base,
    protected: z.boolean({ error: 'protected (true or false) is required' }).describe('true: drops are refused (409) until it is cleared'),
  })
  .loose();

export const DroppedTable = z
  .object({
    id: z.string().describe("the dropped table's id (undrop and purge name it)"),
    table: z.array(z.string()).describe('its identifier when it was dropped'),
    catalog: z.string().optional().describe('its database prefix (operator listings only)'),
    location: z.string().describe('where its data is kept until purged'),
    properties: z.record(z.string(), z.string()),
    last_version: z.number().int().nullable().describe('its latest version when it was dropped; null: no data, or not read'),
    storage_bytes: z.number().int().nullable().describe('its size as last measured before the drop; null: never measured'),
    dropped_at: z.string(),
    purge_after: z.string().describe('when the purge sweep removes it and its data'),
    dropped_by: z.string().describe('the principal that dropped it'),
  })
  .meta({ id: 'DroppedTable' });

export const ListDroppedTablesResponse = z
  .object({ dropped_tables: z.array(DroppedTable), page_token: z.string().optional() })
  .meta({ id: 'ListDroppedTablesResponse' });

export const UndropTableResponse = z
  .object({
    id: z.array(z.string()).describe('the identifier it was restored under'),
    location: z.string(),
    properties: z.record(z.string(), z.string()),
    version: z.number().int().nullable().describe('its latest version when it was dropped'),
  })
  .meta({ id: 'UndropTableResponse' });

export const PurgeTableResponse = z
  .object({
    id: z.string(),
    table: z.array(z.string()),
    location: z.string(),
    last_version: z.number().int().nullable(),
    removed: z.boolean().describe('false: the data could not be deleted now; the reclaimer deletes it'),
  })
  .meta({ id: 'PurgeTableResponse' });

export const ProtectionResponse = z
  .object({ properties: z.record(z.string(), z.string()).describe("the object's properties after the change") })
  .meta({ id: 'ProtectionResponse' });
