import { Injectable } from '@nestjs/common';
import { PrismaClient } from '../../generated/prisma/client';

export type Role = 'read' | 'write' | 'admin';

export interface ApiKeyRow {
  id: string;
  databaseId: string;
  role: Role;
  description: string | null;
  createdAt: Date;
  expiresAt: Date | null;
  revokedAt: Date | null;
}

const PUBLIC_COLUMNS = {
  id: true,
  databaseId: true,
  role: true,
  description: true,
  createdAt: true,
  expiresAt: true,
  revokedAt: true,
} as const;

@Injectable()
export class ApiKeysRepository {
  constructor(private readonly prisma: PrismaClient) {}

  async insert(k: { id: string; databaseId: string; hash: string; role: Role; description?: string }): Promise<ApiKeyRow> {
    return (await this.prisma.apiKey.create({ data: k, select: PUBLIC_COLUMNS })) as ApiKeyRow;
  }

  /** The key with this secret hash, with its database's name. Never returns the hash. */
  async findByHash(hash: string): Promise<(ApiKeyRow & { hash: string; databaseName: string }) | null> {
    const row = await this.prisma.apiKey.findUnique({
      where: { hash },
      select: { ...PUBLIC_COLUMNS, hash: true, database: { select: { name: true } } },
    });
    if (!row) return null;
    const { database, ...rest } = row;
    return { ...(rest as ApiKeyRow & { hash: string }), databaseName: database.name };
  }

  async listByDatabase(databaseId: string): Promise<ApiKeyRow[]> {
    return (await this.prisma.apiKey.findMany({
      where: { databaseId },
      orderBy: { createdAt: 'asc' },
      select: PUBLIC_COLUMNS,
    })) as ApiKeyRow[];
  }

  async delete(databaseId: string, id: string): Promise<boolean> {
    return (await this.prisma.apiKey.deleteMany({ where: { id, databaseId } })).count === 1;
  }
}
