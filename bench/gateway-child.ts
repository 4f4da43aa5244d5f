/** The gateway as a forked child of the benchmark: starts like `npm start` and says when it listens. */
import 'reflect-metadata';
import { createGateway } from '../src/app';
import { loadConfig } from '../src/platform/config/config';

void (async () => {
  const config = loadConfig();
  const app = await createGateway(config);
  await app.listen({ port: config.port, host: '127.0.0.1' });
  process.send?.('ready');
  process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
})();
