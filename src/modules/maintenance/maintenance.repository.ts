import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { decodePath } from '../../platform/http/ids';
import { CatalogClient, UnitOfWork } from '../../platform/db/unit-of-work';

/** A table as maintenance needs it. */
export interface MaintainedTable {
  id: string;
  databaseId: string;
  databaseName: string;
  catalog: string;
  namespacePath: string;
  name: string;
  location: string;
  properties: Record<string, string>;
  managed: boolean;
  /** Another table is a shallow clone of this one (it reads this table's files). */
  cloneSource: boolean;
  /** This table is a shallow clone (its data files are another table's). */
  clone: boolean;
}

/** What a table's policy is made of, level by level. */
export interface PolicyInputs {
  database: Record<string, unknown> | null;
  namespace: Record<string, string> | null;
  table: Record<string, string>;
}

export const MAINTENANCE_JOB = 'maintenance';
export const SYSTEM_PRINCIPAL = 'system:maintenance';

const TABLE_COLUMNS = `t.id, t.database_id AS "databaseId", d.name AS "databaseName", t.catalog, t.namespace_path AS "namespacePath",
  t.name, t.location, t.properties, d.managed_versioning AS managed,
  EXISTS (SELECT 1 FROM tables c WHERE c.clone_source_id = t.id) AS "cloneSource",
  t.clone_source_id IS NOT NULL AS clone`;

/** The table id (namespace path + name) a job names. */
export const tableIdOf = (t: Pick<MaintainedTable, 'namespacePath' | 'name'>) => [...decodePath(t.namespacePath), t.name];

/** Maintenance's catalog reads and writes (see the migration 20261127130000_maintenance). */
@Injectable()
export class MaintenanceRepository {
  constructor(private readonly uow: UnitOfWork) {}

  private get db(): CatalogClient {
    return this.uow.db;
  }

  async tableAt(location: string): Promise<MaintainedTable | null> {
    const rows = await this.db.$queryRawUnsafe<MaintainedTable[]>(
      `SELECT ${TABLE_COLUMNS} FROM tables t JOIN databases d ON d.id = t.database_id
        WHERE md5(t.location) = md5($1) AND t.location = $1 AND t.materialized_at IS NOT NULL`,
      location,
    );
    return rows[0] ?? null;
  }

  async tableById(id: string): Promise<MaintainedTable | null> {
    const rows = await this.db.$queryRawUnsafe<MaintainedTable[]>(
      `SELECT ${TABLE_COLUMNS} FROM tables t JOIN databases d ON d.id = t.database_id WHERE t.id = $1::uuid`,
      id,
    );
    return rows[0] ?? null;
  }

  /**
   * Queues the automatic maintenance job of a table, to run no earlier than `delayMs` from now, unless one is queued
   * already (the partial unique index jobs_one_queued_maintenance: a burst of commits makes one job). Answers the new
   * job's id, or null when one was queued.
   */
  async enqueue(t: MaintainedTable, delayMs: number, trigger: string): Promise<string | null> {
    const id = randomUUID();
    const spec = JSON.stringify({ maintenance: true, automatic: true, table_uuid: t.id, trigger, table: t.name, table_id: tableIdOf(t) });
    const rows = await this.db.$queryRawUnsafe<{ id: string }[]>(
      `INSERT INTO jobs (id, database_id, catalog, table_id, job_type, state, spec, principal, not_before)
       VALUES ($1::uuid, $2::uuid, $3, $4::text[], '${MAINTENANCE_JOB}', 'QUEUED', $5::jsonb, '${SYSTEM_PRINCIPAL}',
               now() + $6::int * interval '1 millisecond')
       ON CONFLICT (database_id, catalog, table_id) WHERE state = 'QUEUED' AND job_type = '${MAINTENANCE_JOB}' AND (spec ->> 'automatic') = 'true' DO NOTHING
       RETURNING id`,
      id,
      t.databaseId,
      t.catalog,
      tableIdOf(t),
      spec,
      delayMs,
    );
    return rows[0]?.id ?? null;
  }

  /** The settings of the levels above a table: its database's (operator) and its namespace's properties. */
  async policyInputs(t: MaintainedTable): Promise<PolicyInputs> {
    const rows = await this.db.$queryRawUnsafe<{ database: Record<string, unknown> | null; namespace: Record<string, string> | null }[]>(
      `SELECT d.maintenance AS database,
              (SELECT n.properties FROM namespaces n WHERE n.database_id = d.id AND n.catalog = $2 AND n.path = $3) AS namespace
         FROM databases d WHERE d.id = $1::uuid`,
      t.databaseId,
      t.catalog,
      t.namespacePath,
    );
    return {
      database: rows[0]?.database ?? null,
      namespace: t.namespacePath === '' ? null : (rows[0]?.namespace ?? null),
      table: t.properties ?? {},
    };
  }

  async databasePolicy(databaseId: string): Promise<Record<string, unknown> | null> {
    const rows = await this.db.$queryRawUnsafe<{ m: Record<string, unknown> | null }[]>(
      `SELECT maintenance AS m FROM databases WHERE id = $1::uuid`,
      databaseId,
    );
    return rows[0]?.m ?? null;
  }

  async setDatabasePolicy(databaseId: string, policy: Record<string, unknown> | null): Promise<void> {
    await this.db.$executeRawUnsafe(
      `UPDATE databases SET maintenance = $2::jsonb WHERE id = $1::uuid`,
      databaseId,
      policy === null ? null : JSON.stringify(policy),
    );
  }

  async databaseByName(name: string): Promise<{ id: string; name: string } | null> {
    const rows = await this.db.$queryRawUnsafe<{ id: string; name: string }[]>(`SELECT id, name FROM databases WHERE name = $1`, name);
    return rows[0] ?? null;
  }

  /** Tables with data, by id after `after`, for the periodic sweep. */
  async tablesWithData(after: string | null, limit: number): Promise<MaintainedTable[]> {
    return this.db.$queryRawUnsafe<MaintainedTable[]>(
      `SELECT ${TABLE_COLUMNS} FROM tables t JOIN databases d ON d.id = t.database_id
        WHERE t.materialized_at IS NOT NULL AND ($1::uuid IS NULL OR t.id > $1::uuid) ORDER BY t.id LIMIT $2`,
      after,
      limit,
    );
  }

  /** Removes the catalog rows of a managed table's versions (main), before their manifests go. */
  async deleteVersions(tableId: string, versions: number[]): Promise<number> {
    if (!versions.length) return 0;
    return this.db.$executeRawUnsafe(
      `DELETE FROM table_versions WHERE table_id = $1::uuid AND branch = '' AND version = ANY($2::bigint[])`,
      tableId,
      versions.map(String),
    );
  }

  /** The versions (main) the catalog lists for a managed table. */
  async listedVersions(tableId: string): Promise<number[]> {
    const rows = await this.db.$queryRawUnsafe<{ v: string }[]>(
      `SELECT version::text AS v FROM table_versions WHERE table_id = $1::uuid AND branch = ''`,
      tableId,
    );
    return rows.map((r) => Number(r.v));
  }
}
