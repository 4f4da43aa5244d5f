import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { ApiKeyRow, ApiKeysRepository, Role } from './api-keys.repository';

export const API_KEY_PREFIX = 'lgw_';

export const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/** Constant-time equality of two secrets (compares their fixed-length digests). */
export function secretsEqual(a: string, b: string): boolean {
  return timingSafeEqual(sha256(a), sha256(b));
}

export interface IssuedKey {
  key: ApiKeyRow;
  secret: string;
}

/**
 * API keys: 256-bit random secrets with a recognisable prefix, stored only as SHA-256 digests (a fast hash is
 * right for high-entropy secrets; there is nothing to brute-force). Lookup is by digest, then the digest is
 * compared in constant time.
 */
@Injectable()
export class ApiKeysService {
  constructor(private readonly keys: ApiKeysRepository) {}

  async issue(databaseId: string, role: Role, description?: string): Promise<IssuedKey> {
    const secret = API_KEY_PREFIX + randomBytes(32).toString('base64url');
    const key = await this.keys.insert({
      id: randomUUID(),
      databaseId,
      hash: sha256(secret).toString('hex'),
      role,
      description,
    });
    return { key, secret };
  }

  /** The active key for this secret, or null (unknown, revoked or expired). */
  async authenticate(secret: string): Promise<(ApiKeyRow & { databaseName: string }) | null> {
    const digest = sha256(secret);
    const row = await this.keys.findByHash(digest.toString('hex'));
    if (!row || !timingSafeEqual(Buffer.from(row.hash, 'hex'), digest)) return null;
    if (row.revokedAt || (row.expiresAt && row.expiresAt.getTime() <= Date.now())) return null;
    const { hash: _omit, ...key } = row;
    return key;
  }

  list(databaseId: string) {
    return this.keys.listByDatabase(databaseId);
  }

  delete(databaseId: string, id: string) {
    return this.keys.delete(databaseId, id);
  }
}
