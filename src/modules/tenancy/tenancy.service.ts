import { Injectable } from '@nestjs/common';
import { Errors } from '../../common/errors';
import { DatabasesRepository } from '../databases/databases.repository';

export const DATABASE_HEADER = 'x-service-database';
/** What the official LanceDB clients send (remote mode with a host override). */
export const DATABASE_HEADER_ALIAS = 'x-lancedb-database';

export function headerValue(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const v = headers[name];
  const s = Array.isArray(v) ? v[0] : v;
  return s === undefined || s.trim() === '' ? undefined : s.trim();
}

/** Resolves which database (tenant) a request addresses. */
@Injectable()
export class TenancyService {
  constructor(private readonly databases: DatabasesRepository) {}

  /** The database name a request asks for; 400 naming the expected header when there is none. */
  requestedName(headers: Record<string, string | string[] | undefined>): string {
    const name = headerValue(headers, DATABASE_HEADER) ?? headerValue(headers, DATABASE_HEADER_ALIAS);
    if (!name) {
      throw Errors.invalidInput(`no database given: send the '${DATABASE_HEADER}: <database>' header`);
    }
    return name;
  }

  async resolve(name: string): Promise<{ id: string; name: string }> {
    const db = await this.databases.findByName(name);
    if (!db) throw Errors.namespaceNotFound(`database '${name}' not found`);
    return { id: db.id, name: db.name };
  }
}
