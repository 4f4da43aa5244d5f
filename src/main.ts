import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { ConfigError, loadConfig } from './config/config';
import { createGateway } from './app';

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
  const catalog = config.databaseUrl ? 'postgres (DATABASE_URL)' : `embedded postgres in ${config.dataDir}/catalog`;
  new Logger('Gateway').log(
    `listening on http://${config.host}:${config.port}${config.basePath} — catalog: ${catalog}; tables: ${config.storageRoot}`,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`gateway failed to start: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});
