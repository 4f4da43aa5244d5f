import { Inject, Injectable } from '@nestjs/common';
import { z } from 'zod';
import { APP_CONFIG, AppConfig } from '../../platform/config/config';
import { Errors } from '../../platform/http/errors';
import { UnitOfWork } from '../../platform/db/unit-of-work';
import { AuditService } from '../audit';
import { Access, TenantContext } from '../identity';
import { MaintenanceRepository } from './maintenance.repository';
import { MaintenanceService } from './maintenance.service';
import { DatabasePolicyBody, OperatorRunMaintenanceBody } from './maintenance.schemas';

/** A database's maintenance for the operator API and the CLI. */
@Injectable()
export class MaintenanceAdmin {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repo: MaintenanceRepository,
    private readonly maintenance: MaintenanceService,
    private readonly audit: AuditService,
    private readonly uow: UnitOfWork,
  ) {}

  private serverDefaults() {
    const m = this.config.maintenance;
    return {
      enabled: m.enabled,
      compact_min_fragments: m.compactMinFragments,
      index_min_unindexed_rows: m.indexMinUnindexedRows,
      cleanup_retention_seconds: m.cleanupRetentionSeconds,
      max_concurrent: m.maxConcurrentPerDatabase,
    };
  }

  private async database(name: string) {
    const db = await this.repo.databaseByName(name);
    if (!db) throw Errors.notFound(`database '${name}' not found`);
    return db;
  }

  async get(name: string) {
    const db = await this.database(name);
    const m = await this.repo.databasePolicy(db.id);
    return { database: db.name, maintenance: m ? DatabasePolicyBody.parse(m) : null, server_defaults: this.serverDefaults() };
  }

  async set(name: string, policy: z.output<typeof DatabasePolicyBody>) {
    const db = await this.database(name);
    const value = Object.keys(policy).length ? policy : null;
    await this.uow.run(async () => {
      await this.repo.setDatabasePolicy(db.id, value);
      await this.audit.recordWithChange({ databaseId: db.id, details: { maintenance: value } });
    });
    return { database: db.name, maintenance: value, server_defaults: this.serverDefaults() };
  }

  async run(name: string, body: z.output<typeof OperatorRunMaintenanceBody>, actor = 'operator') {
    const db = await this.database(name);
    const t: TenantContext = {
      database: { id: db.id, name: db.name, rateLimit: null },
      catalog: body.catalog,
      role: 'admin',
      access: Access.of('admin'),
      principal: actor,
    };
    return this.maintenance.runNow(t, body.table_id, body.type, { dryRun: body.dry_run, retentionSeconds: body.retention_seconds });
  }
}
