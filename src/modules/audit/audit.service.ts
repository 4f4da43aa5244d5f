import { Inject, Injectable, Logger } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../../config/config';
import { paginate } from '../../common/pagination';
import type { AuditTrailResponse } from '../../common/response-schemas';
import { isUuid, PageRequest } from '../../common/validation/fields';
import { DatabasesRepository } from '../databases/databases.repository';
import { AuditEventRow, AuditRepository } from './audit.repository';

export interface AuditEntry {
  databaseId?: string;
  databaseName: string;
  actor: string;
  action: string;
  target: string;
  details?: Record<string, unknown>;
  requestId?: string;
}

/** An audit page token: [ISO timestamp, event uuid] of the last event of the previous page. */
const isAuditKey = (v: unknown): v is [string, string] =>
  Array.isArray(v) &&
  v.length === 2 &&
  typeof v[0] === 'string' &&
  !Number.isNaN(Date.parse(v[0])) &&
  isUuid(v[1]);

/**
 * The audit trail. Records are written after the change they describe has committed: a failure to record is
 * logged, never turned into an error for a request whose change already happened.
 */
@Injectable()
export class AuditService {
  private readonly log = new Logger('Audit');

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repo: AuditRepository,
    private readonly databases: DatabasesRepository,
  ) {}

  async record(e: AuditEntry): Promise<void> {
    try {
      const databaseId = e.databaseId ?? (await this.databases.findByName(e.databaseName))?.id ?? null;
      await this.repo.insert({ ...e, databaseId, details: e.details ?? {} });
    } catch (err) {
      this.log.error(`could not record ${e.action} of ${e.target} by ${e.actor}: ${(err as Error).message}`);
    }
  }

  async list(databaseId: string, page: PageRequest): Promise<AuditTrailResponse> {
    const { rows, ...next } = await paginate(page, this.config, {
      isKey: isAuditKey,
      fetch: (before, take) => this.repo.list(databaseId, before, take),
      keyOf: (r: AuditEventRow): [string, string] => [r.createdAt.toISOString(), r.id],
    });
    return {
      events: rows.map((r) => ({
        id: r.id,
        actor: r.actor,
        action: r.action,
        target: r.target,
        details: r.details,
        request_id: r.requestId,
        created_at: r.createdAt.toISOString(),
      })),
      ...next,
    };
  }
}
