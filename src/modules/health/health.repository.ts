import { Injectable } from '@nestjs/common';
import { CatalogClient, UnitOfWork } from '../../platform/db/unit-of-work';

@Injectable()
export class HealthRepository {
  constructor(private readonly uow: UnitOfWork) {}

  private get db(): CatalogClient {
    return this.uow.db;
  }

  async ping(): Promise<void> {
    await this.db.$queryRaw`SELECT 1`;
  }
}
