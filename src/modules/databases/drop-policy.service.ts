import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../../platform/config/config';
import { Errors } from '../../platform/http/errors';
import { displayId } from '../../platform/http/ids';
import { DatabasesRepository } from '../identity';

/** The property that protects a table or a namespace from being dropped (docs/soft-delete.md). */
export const PROTECTED_PROPERTY = 'protected';

export const isProtected = (properties: unknown): boolean =>
  !!properties &&
  typeof properties === 'object' &&
  String((properties as Record<string, unknown>)[PROTECTED_PROPERTY]).toLowerCase() === 'true';

export type DropProfile = 'hard' | 'soft';

/** What a drop of a database's table does: 'hard' deletes its data now, 'soft' keeps it for `retentionSeconds`. */
export interface EffectiveDropProfile {
  profile: DropProfile;
  retentionSeconds: number;
  /** Where each setting came from: the database's own, or the server's (DROP_PROFILE / DROP_RETENTION_SECONDS). */
  source: { profile: 'database' | 'server'; retention_seconds: 'database' | 'server' };
}

/** The delete profile in force for a database (its own, else the server's), and the protection refusals. */
@Injectable()
export class DropPolicy {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly databases: DatabasesRepository,
  ) {}

  async of(databaseId: string): Promise<EffectiveDropProfile> {
    const own = await this.databases.dropProfileOf(databaseId);
    return this.effective(own);
  }

  effective(own: { dropProfile?: string | null; dropRetentionSeconds?: number | null } | null): EffectiveDropProfile {
    const profile = own?.dropProfile === 'soft' || own?.dropProfile === 'hard' ? own.dropProfile : this.config.drop.profile;
    const retention = own?.dropRetentionSeconds ?? this.config.drop.retentionSeconds;
    return {
      profile,
      retentionSeconds: retention,
      source: {
        profile: own?.dropProfile ? 'database' : 'server',
        retention_seconds: own?.dropRetentionSeconds !== null && own?.dropRetentionSeconds !== undefined ? 'database' : 'server',
      },
    };
  }

  /** 409 (code 19) when a table's properties protect it. */
  assertTableNotProtected(properties: unknown, id: string[]): void {
    if (isProtected(properties)) {
      throw Errors.invalidTableState(
        `table '${displayId(id)}' is protected (property protected=true): clear the flag before dropping or deregistering it`,
      );
    }
  }
}
