import { z } from 'zod';
import type { AppConfig } from '../../platform/config/config';
import type { PolicyInputs } from './maintenance.repository';

/** Where a setting of a table's maintenance policy came from, lowest first. */
export type PolicySource = 'server' | 'database' | 'namespace' | 'table';

export interface PolicyValue<T> {
  value: T;
  source: PolicySource;
}

export interface MaintenancePolicy {
  enabled: PolicyValue<boolean>;
  compact_min_fragments: PolicyValue<number>;
  index_min_unindexed_rows: PolicyValue<number>;
  cleanup_retention_seconds: PolicyValue<number>;
  max_concurrent: PolicyValue<number>;
}

/** The settings a level may set (max_concurrent only at the database level: it is that database's budget). */
export const DatabasePolicyBody = z
  .object({
    enabled: z.boolean().optional(),
    compact_min_fragments: z.number().int().min(2).optional(),
    index_min_unindexed_rows: z.number().int().min(1).optional(),
    cleanup_retention_seconds: z.number().int().min(0).optional(),
    max_concurrent: z.number().int().min(1).max(64).optional(),
  })
  .strict();

/** Namespace and table properties that set maintenance (strings, as properties are). */
export const PROPERTY_PREFIX = 'maintenance.';

const parseBool = (v: unknown): boolean | undefined =>
  v === true || v === 'true' ? true : v === false || v === 'false' ? false : undefined;
const parseInt =
  (min: number) =>
  (v: unknown): number | undefined => {
    const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
    return Number.isSafeInteger(n) && n >= min ? n : undefined;
  };

const PARSERS = {
  enabled: parseBool,
  compact_min_fragments: parseInt(2),
  index_min_unindexed_rows: parseInt(1),
  cleanup_retention_seconds: parseInt(0),
} as const;

/**
 * A table's effective policy: the server's defaults (MAINTENANCE_*), overridden by its database's (operator API), its
 * namespace's properties (`maintenance.<setting>`), then its own properties, each setting on its own; a value a level
 * cannot parse is ignored (the level below applies).
 */
export function resolvePolicy(config: AppConfig, inputs: PolicyInputs): MaintenancePolicy {
  const m = config.maintenance;
  const out: MaintenancePolicy = {
    enabled: { value: m.enabled, source: 'server' },
    compact_min_fragments: { value: m.compactMinFragments, source: 'server' },
    index_min_unindexed_rows: { value: m.indexMinUnindexedRows, source: 'server' },
    cleanup_retention_seconds: { value: m.cleanupRetentionSeconds, source: 'server' },
    max_concurrent: { value: m.maxConcurrentPerDatabase, source: 'server' },
  };
  const levels: Array<[PolicySource, Record<string, unknown> | null, string]> = [
    ['database', inputs.database, ''],
    ['namespace', inputs.namespace, PROPERTY_PREFIX],
    ['table', inputs.table, PROPERTY_PREFIX],
  ];
  for (const [source, values, prefix] of levels) {
    if (!values) continue;
    for (const key of Object.keys(PARSERS) as Array<keyof typeof PARSERS>) {
      const v = PARSERS[key](values[prefix + key]);
      if (v !== undefined) (out[key] as PolicyValue<unknown>) = { value: v, source };
    }
  }
  const budget = parseInt(1)(inputs.database?.max_concurrent);
  if (budget !== undefined) out.max_concurrent = { value: budget, source: 'database' };
  return out;
}
