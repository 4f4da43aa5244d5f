import { ChildProcess, fork } from 'node:child_process';
import * as path from 'node:path';
import { freePort } from './redis';
import { program } from './root';

/** A gateway in its own OS process (the built bench/gateway-child entry), for replica tests. */
export async function startGatewayProcess(env: Record<string, string>): Promise<{ url: string; close(): Promise<void> }> {
  const port = await freePort();
  const child: ChildProcess = fork(program(path.resolve(__dirname, '../../bench/gateway-child.js')), [], {
    env: { ...process.env, LOG_LEVEL: 'error', ...env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`gateway process exited with ${code}`)));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
