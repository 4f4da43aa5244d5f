import { spawnSync, SpawnSyncReturns } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ROOT } from './root';

/** Whether the system has jemalloc where scripts/start.sh looks for it. */
export const jemallocInstalled = [
  '/usr/lib/x86_64-linux-gnu',
  '/usr/lib/aarch64-linux-gnu',
  '/usr/lib64',
  '/usr/lib',
  '/usr/local/lib',
].some((d) => fs.existsSync(path.join(d, 'libjemalloc.so.2')));

/**
 * Runs `node <args>` through scripts/start.sh, as `npm start` runs the gateway, with this process's environment less
 * its allocator settings (so the script picks its own) plus `env`.
 */
export function runStartScript(args: string[], env: Record<string, string>): SpawnSyncReturns<string> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(LD_PRELOAD|MALLOC_|LGW_ALLOCATOR)/.test(k))) as Record<
    string,
    string
  >;
  return spawnSync('sh', [path.join(ROOT, 'scripts', 'start.sh'), ...args], {
    env: { ...base, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
}
