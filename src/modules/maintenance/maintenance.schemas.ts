import { z } from 'zod';
import { DatabasePolicyBody } from './maintenance.policy';

const base = { id: z.unknown().optional(), identity: z.unknown().optional(), context: z.unknown().optional() };

const Type = z.enum(['all', 'compact', 'optimize_indices', 'cleanup']);

export const RunMaintenanceBody = z
  .object({
    ...base,
    type: Type.default('all'),
    dry_run: z.boolean().default(false),
    retention_seconds: z.number().int().min(0).optional(),
  })
  .loose();

export const OperatorRunMaintenanceBody = z
  .object({
    table_id: z.array(z.string().min(1)).min(1),
    catalog: z.string().default(''),
    type: Type.default('all'),
    dry_run: z.boolean().default(false),
    retention_seconds: z.number().int().min(0).optional(),
  })
  .strict();

const Setting = <T extends z.ZodType>(v: T) => z.object({ value: v, source: z.enum(['server', 'database', 'namespace', 'table']) });

export const MaintenancePolicyResponse = z
  .object({
    table_id: z.array(z.string()),
    policy: z.object({
      enabled: Setting(z.boolean()),
      compact_min_fragments: Setting(z.number()),
      index_min_unindexed_rows: Setting(z.number()),
      cleanup_retention_seconds: Setting(z.number()),
      max_concurrent: Setting(z.number()),
    }),
  })
  .meta({ id: 'MaintenancePolicyResponse' });

export const CleanupDryRunResponse = z
  .object({
    dry_run: z.literal(true),
    cleanup_allowed: z.boolean(),
    reason: z.string().optional(),
    retention_seconds: z.number(),
    cleanup_before_millis: z.number(),
    versions_to_remove: z.array(z.object({ version: z.number(), timestamp_millis: z.number() })),
    versions_kept: z.number(),
    tagged_versions: z.array(z.number()),
    bytes_on_store: z.number(),
    current_version_bytes: z.number(),
    reclaimable_bytes_at_most: z.number(),
  })
  .meta({ id: 'CleanupDryRunResponse' });

export const RunMaintenanceResponse = z.union([z.object({ job_id: z.string() }), CleanupDryRunResponse]);

export const DatabaseMaintenanceResponse = z
  .object({
    database: z.string(),
    /** What the operator set (null: nothing, the server's defaults apply). */
    maintenance: DatabasePolicyBody.nullable(),
    server_defaults: DatabasePolicyBody,
  })
  .meta({ id: 'DatabaseMaintenanceResponse' });

export { DatabasePolicyBody };
