import { ADMIN_KEY, createPgDatabase, startGateway, TestGateway } from './gateway';
import { startGatewayProcess } from './gateway-process';
import { SHARED_REDIS_URL } from './redis';

export interface ThrottledReplicas {
  /** In this process. */
  a: TestGateway;
  /** A second gateway process on the same catalog, data folder and Redis. */
  b: { url: string; close(): Promise<void> };
  /** The catalog both use. */
  catalogUrl: string;
  close(): Promise<void>;
}

/**
 * Two gateway replicas on one fresh Postgres catalog and the shared Redis, for rate limits counted across replicas.
 * A generous Redis timeout: on a loaded machine a slow reply would be served unthrottled (fail-open) and the count
 * be off.
 */
export async function startThrottledReplicas(): Promise<ThrottledReplicas> {
  const pg = await createPgDatabase();
  const env = {
    DATABASE_URL: pg.url,
    REDIS_URL: SHARED_REDIS_URL,
    RATE_LIMIT_LIMIT: '1000',
    RATE_LIMIT_WINDOW_MS: '60000',
    REDIS_TIMEOUT_MS: '2000',
  };
  const a = await startGateway('postgres', env);
  const b = await startGatewayProcess({ ...env, ADMIN_API_KEY: ADMIN_KEY, DATA_DIR: a.dataDir });
  return {
    a,
    b,
    catalogUrl: pg.url,
    async close() {
      await a.close();
      await b.close();
      await pg.drop();
    },
  };
}
