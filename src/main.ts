import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { ConfigError, loadConfig } from './platform/config/config';
import { createGateway } from './app';

const SHUTDOWN_GRACE_MS = 10_000;

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  const app = await createGateway(config);
  await app.listen({ port: config.port, host: config.host });
  const catalog = !config.databaseUrl
    ? `embedded postgres in ${config.dataDir}/catalog`
    : config.dbPooler === 'transaction'
      ? 'postgres through a transaction pooler (DATABASE_URL; migrations on DATABASE_DIRECT_URL)'
      : 'postgres (DATABASE_URL)';
  const log = new Logger('Gateway');
  // Graceful shutdown: stop accepting, let in-flight requests finish, close pools; bounded so a stuck request
  // cannot keep a replica from stopping.
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.log(`${signal} received: shutting down`);
    setTimeout(() => process.exit(1), SHUTDOWN_GRACE_MS).unref();
    app.close().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error(`shutdown failed: ${(err as Error)?.message}`);
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
  log.log(`listening on http://${config.host}:${config.port}${config.basePath} — catalog: ${catalog}; tables: ${config.storageRoot}`);
}

main().catch((err: unknown) => {
  process.stderr.write(`gateway failed to start: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});
