import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { PrismaClient } from '../../generated/prisma/client';

export interface DatabaseRow {
  id: string;
  name: string;
  properties: Record<string, string>;
  createdAt: Date;
}

@Injectable()
export class DatabasesRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /** null when the name is taken. */
  async insert(name: string, properties: Record<string, string>): Promise<DatabaseRow | null> {
    const rows = await this.prisma.$queryRaw<DatabaseRow[]>`
      INSERT INTO databases (id, name, properties)
      VALUES (${randomUUID()}::uuid, ${name}, ${JSON.stringify(properties)}::jsonb)
      ON CONFLICT (name) DO NOTHING
      RETURNING id, name, properties, created_at AS "createdAt"`;
    return rows[0] ?? null;
  }

  async findByName(name: string): Promise<DatabaseRow | null> {
    return (await this.prisma.database.findUnique({ where: { name } })) as DatabaseRow | null;
  }

  async list(after: string | undefined, take: number): Promise<DatabaseRow[]> {
    return (await this.prisma.database.findMany({
      where: after !== undefined ? { name: { gt: after } } : {},
      orderBy: { name: 'asc' },
      take,
    })) as DatabaseRow[];
  }

  async count(): Promise<number> {
    return this.prisma.database.count();
  }

  /** Removes the database and (by foreign-key cascade) its keys, namespaces and tables. */
  async delete(id: string): Promise<boolean> {
    return (await this.prisma.database.deleteMany({ where: { id } })).count === 1;
  }
}
