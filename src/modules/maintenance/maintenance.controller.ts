import { Controller, Get, Param, Post, Put } from '@nestjs/common';
import { z } from 'zod';
import { ObjectId } from '../../platform/http/route-params';
import { ValidBody } from '../../platform/http/validation/zod-validation.pipe';
import { Audited } from '../audit';
import { CATALOG_ERRORS, Operation, OPERATOR_ERRORS } from '../../platform/http/operation.decorator';
import { Tenant, TenantContext } from '../identity';
import { MaintenanceAdmin } from './maintenance.admin';
import { MaintenanceService } from './maintenance.service';
import {
  DatabaseMaintenanceResponse,
  DatabasePolicyBody,
  MaintenancePolicyResponse,
  OperatorRunMaintenanceBody,
  RunMaintenanceBody,
  RunMaintenanceResponse,
} from './maintenance.schemas';

/** A table's maintenance, for the database's keys: its policy (read) and a run now (write). */
@Controller('v1')
export class MaintenanceController {
  constructor(private readonly maintenance: MaintenanceService) {}

  @Get('table/:id/maintenance')
  @Operation({
    operationId: 'DescribeTableMaintenance',
    summary: "A table's maintenance policy",
    description:
      "Each setting of the table's maintenance policy with the level it came from: `server` (MAINTENANCE_* settings), " +
      '`database` (operator API), `namespace` or `table` (properties `maintenance.<setting>`).',
    tag: 'Table',
    access: 'catalog',
    needs: { privilege: 'describe', on: 'table' },
    responses: { 200: { description: 'The policy', schema: MaintenancePolicyResponse } },
    errors: CATALOG_ERRORS,
  })
  policy(@Tenant() t: TenantContext, @ObjectId() id: string[]) {
    return this.maintenance.policyOf(t, id);
  }

  @Post('table/:id/maintenance/run')
  @Operation({
    operationId: 'RunTableMaintenance',
    summary: "Run a table's maintenance now",
    description:
      'Queues a job (`compact`, `optimize_indices`, `cleanup`, or `all`: the automatic job run regardless of its ' +
      'thresholds) and answers its id (see /v1/jobs/describe). `dry_run` with `cleanup` answers what would be removed ' +
      "instead. `retention_seconds` overrides the policy's retention for this run.",
    tag: 'Table',
    access: 'catalog',
    needs: { privilege: 'manage', on: 'table' },
    responses: { 200: { description: 'The job, or the dry run', schema: RunMaintenanceResponse } },
    errors: CATALOG_ERRORS,
  })
  @Audited('table.maintenance')
  run(@Tenant() t: TenantContext, @ObjectId() id: string[], @ValidBody(RunMaintenanceBody) body: z.output<typeof RunMaintenanceBody>) {
    return this.maintenance.runNow(t, id, body.type, { dryRun: body.dry_run, retentionSeconds: body.retention_seconds });
  }
}

const NAME = { name: { description: 'Database name.' } };

/** A database's maintenance, for the operator (a run now also for the database's admin keys). */
@Controller('admin/v1/databases')
export class MaintenanceAdminController {
  constructor(private readonly admin: MaintenanceAdmin) {}

  @Get(':name/maintenance')
  @Operation({
    operationId: 'GetDatabaseMaintenance',
    summary: "A database's maintenance policy",
    tag: 'Operator',
    access: 'operator',
    pathParams: NAME,
    responses: { 200: { description: 'The policy', schema: DatabaseMaintenanceResponse } },
    errors: OPERATOR_ERRORS,
  })
  get(@Param('name') name: string) {
    return this.admin.get(name);
  }

  @Put(':name/maintenance')
  @Operation({
    operationId: 'SetDatabaseMaintenance',
    summary: "Set a database's maintenance policy",
    description:
      "Replaces what the database sets (`{}`: the server's defaults). `max_concurrent` is its budget of maintenance jobs running at once.",
    tag: 'Operator',
    access: 'operator',
    pathParams: NAME,
    responses: { 200: { description: 'The policy', schema: DatabaseMaintenanceResponse } },
    errors: OPERATOR_ERRORS,
  })
  @Audited('database.maintenance', (b: Record<string, unknown>) => ({ maintenance: b }))
  set(@Param('name') name: string, @ValidBody(DatabasePolicyBody) body: z.output<typeof DatabasePolicyBody>) {
    return this.admin.set(name, body);
  }

  @Post(':name/maintenance/run')
  @Operation({
    operationId: 'RunDatabaseTableMaintenance',
    summary: "Run a table's maintenance now (operator)",
    tag: 'Operator',
    access: 'database-admin',
    pathParams: NAME,
    responses: { 200: { description: 'The job, or the dry run', schema: RunMaintenanceResponse } },
    errors: OPERATOR_ERRORS,
  })
  @Audited('table.maintenance')
  run(@Param('name') name: string, @ValidBody(OperatorRunMaintenanceBody) body: z.output<typeof OperatorRunMaintenanceBody>) {
    return this.admin.run(name, body);
  }
}
