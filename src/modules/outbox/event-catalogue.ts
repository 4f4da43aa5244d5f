/**
 * The event catalogue (docs/events.md): which audited changes become change events, under which CloudEvents `type`,
 * and what of the audit record's details an event carries. Every change the gateway makes is audited (AuditService),
 * so the outbox is written where the audit record is, in the same transaction; this table says which of those
 * records are events. Actions absent from it (refused requests, the reclaimer's storage clean-up) emit nothing; test/unit/event-catalogue.test.ts checks that every audited action is placed on one side.
 */
export const EVENT_TYPES: Readonly<Record<string, string>> = {
  'database.create': 'lance.database.created',
  'database.update': 'lance.database.updated',
  'database.delete': 'lance.database.deleted',
  'database.maintenance': 'lance.database.maintenance_policy_changed',
  'api_key.issue': 'lance.api_key.issued',
  'api_key.update': 'lance.api_key.updated',
  'api_key.rotate': 'lance.api_key.rotated',
  'api_key.revoke': 'lance.api_key.revoked',
  'namespace.create': 'lance.namespace.created',
  'namespace.drop': 'lance.namespace.dropped',
  'namespace.protection': 'lance.namespace.protection_changed',
  'table.declare': 'lance.table.declared',
  'table.create': 'lance.table.created',
  'table.register': 'lance.table.registered',
  'table.deregister': 'lance.table.deregistered',
  'table.drop': 'lance.table.dropped',
  'table.undrop': 'lance.table.undropped',
  'table.purge': 'lance.table.purged',
  'table.rename': 'lance.table.renamed',
  'table.clone': 'lance.table.cloned',
  'table.protection': 'lance.table.protection_changed',
  'table.insert': 'lance.table.written',
  'table.merge_insert': 'lance.table.written',
  'table.update': 'lance.table.written',
  'table.delete': 'lance.table.written',
  'table.batch_commit': 'lance.table.written',
  'table.restore': 'lance.table.restored',
  'table.add_columns': 'lance.table.schema_changed',
  'table.alter_columns': 'lance.table.schema_changed',
  'table.drop_columns': 'lance.table.schema_changed',
  'table.backfill_column': 'lance.table.schema_changed',
  'table.update_field_metadata': 'lance.table.schema_changed',
  'table.create_index': 'lance.table.index_created',
  'table.drop_index': 'lance.table.index_dropped',
  'table.tag_create': 'lance.table.tag_created',
  'table.tag_update': 'lance.table.tag_updated',
  'table.tag_delete': 'lance.table.tag_deleted',
  'table.branch_create': 'lance.table.branch_created',
  'table.branch_delete': 'lance.table.branch_deleted',
  'table.version_create': 'lance.table.version_created',
  'table.version_batch_create': 'lance.table.version_created',
  'table.version_delete': 'lance.table.version_deleted',
  'table.maintenance': 'lance.table.maintained',
  'job.cancel': 'lance.job.cancelled',
};

/** Audited actions that are deliberately not events (the unit test holds every audited action to one of the lists). */
export const NOT_EVENTS: readonly string[] = ['request.refused', 'storage.reclaim', 'storage.scan_delete'];

/** The operation of a `lance.table.written` or `lance.table.schema_changed` event: the audit action without `table.`. */
const OPERATION_TYPES = new Set(['lance.table.written', 'lance.table.schema_changed']);

/**
 * What an event's data may carry of the audit record's details: ids, versions, names and counts. Anything else
 * (predicates and expressions, which may quote row values; storage locations; network rules; properties) stays in
 * the audit trail. Row counts are renamed to one vocabulary (rows_added, rows_updated, rows_deleted).
 */
const KEPT = new Set([
  'version',
  'branch',
  'tag',
  'mode',
  'column',
  'columns',
  'index_type',
  'index_name',
  'job_id',
  'job_type',
  'key_id',
  'role',
  'changed',
  'new_table_name',
  'new_namespace_id',
  'protected',
  'behavior',
  'is_shallow',
  'entries',
  'operations',
  'tables',
  'namespaces',
  'recovered',
]);
const COUNTS: Readonly<Record<string, 'rows_added' | 'rows_updated' | 'rows_deleted'>> = {
  num_rows: 'rows_added',
  num_inserted_rows: 'rows_added',
  num_updated_rows: 'rows_updated',
  rows_updated: 'rows_updated',
  num_deleted_rows: 'rows_deleted',
};

/** One change event as the outbox keeps it (the CloudEvent is made from it at delivery: cloud-event.ts). */
export interface OutboxEventInput {
  databaseId: string | null;
  databaseName: string;
  type: string;
  subject: string;
  /** The table's or namespace's id (levels), [] for database-wide events: what namespace filters match. */
  objectId: string[];
  data: Record<string, unknown>;
}

/** The audit record an event is made from. */
export interface AuditedChange {
  databaseId: string | null;
  databaseName: string;
  actor: string;
  action: string;
  target: string;
  details: Record<string, unknown>;
  requestId?: string;
}

/**
 * An audit target on a table or namespace: its catalog (`cat:ns$t`, the Enterprise catalogs; '' for the default one)
 * and its id's levels (joined with '$' in the target).
 */
export function auditObject(target: string): { catalog: string; id: string[] } {
  const colon = target.indexOf(':');
  const catalog = colon > 0 && !target.slice(0, colon).includes('$') ? target.slice(0, colon) : '';
  const path = catalog ? target.slice(colon + 1) : target;
  return { catalog, id: path === '' ? [] : path.split('$') };
}

/** The change event of an audit record, or null when its action is not an event (or the change did not happen). */
export function eventOf(c: AuditedChange): OutboxEventInput | null {
  const type = EVENT_TYPES[c.action];
  if (!type || c.details.outcome === 'pending') return null;
  const [kind] = c.action.split('.', 1);
  const onObject = kind === 'table' || kind === 'namespace';
  const { catalog, id: objectId } = onObject ? auditObject(c.target) : { catalog: '', id: [] };
  const data: Record<string, unknown> = { database: c.databaseName };
  if (kind === 'table') data.table = objectId;
  else if (kind === 'namespace') data.namespace = objectId;
  else if (kind === 'api_key' || kind === 'job') data[kind === 'job' ? 'job_id' : 'key_id'] = c.target;
  if (catalog) data.catalog = catalog;
  if (OPERATION_TYPES.has(type)) data.operation = c.action.slice('table.'.length);
  for (const [k, v] of Object.entries(c.details)) {
    if (v === null || v === undefined) continue;
    const count = COUNTS[k];
    if (count && typeof v === 'number') data[count] = v;
    else if (KEPT.has(k)) data[k] = v;
  }
  // A write completed after its writer died (recovered) has no counts: absent rather than a false 0.
  if (type === 'lance.table.written' && !c.details.recovered) {
    data.rows_added ??= 0;
    data.rows_updated ??= 0;
    data.rows_deleted ??= 0;
  }
  data.actor = c.actor;
  if (c.requestId) data.request_id = c.requestId;
  return {
    databaseId: c.databaseId,
    databaseName: c.databaseName,
    type,
    subject: objectId.length > 0 ? `${c.databaseName}/${objectId.join('$')}` : c.databaseName,
    objectId,
    data,
  };
}
