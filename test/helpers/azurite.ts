import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/**
 * A local Azure Blob Storage emulator (Azurite, in memory) on a free port, for tests. Its account and key are the
 * public well-known ones. `--skipApiVersionCheck`: @azure/storage-blob 12.32 speaks a newer REST version than the
 * last Azurite release that runs on Node 20 (3.35) knows.
 */
export interface Azurite {
  /** e.g. http://127.0.0.1:43191 (AZURITE_BLOB_STORAGE_URL; the account URL is `${url}/devstoreaccount1`). */
  url: string;
  stop(): Promise<void>;
}

export async function startAzurite(): Promise<Azurite> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'azurite-'));
  const main = require.resolve('azurite/dist/src/blob/main.js');
  const child: ChildProcess = spawn(
    process.execPath,
    [
      main,
      '--inMemoryPersistence',
      '--disableTelemetry',
      '--skipApiVersionCheck',
      '--silent',
      '--blobHost',
      '127.0.0.1',
      '--blobPort',
      '0',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], cwd: dir }, // in memory; the folder catches anything it might still write
  );
  // Azurite's own failures stay in its process; these are the child's and its pipes' (a failed kill, say), logged
  // rather than left to become an uncaught exception of the test process.
  child.on('error', (err) => console.error(`azurite: ${err.message}`));
  child.stdout?.on('error', () => undefined);
  child.stderr?.on('error', () => undefined);
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const onData = (b: Buffer): void => {
      output += b.toString();
      const m = /successfully listens on (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (m) resolve(m[1]);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => {
      fs.rmSync(dir, { recursive: true, force: true });
      reject(new Error(`azurite exited (${code}) before listening: ${output.slice(0, 500)}`));
    });
  });
  return {
    url,
    stop: async () => {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        const kill = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(kill);
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
