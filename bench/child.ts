import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

const START = path.resolve(__dirname, '..', '..', 'scripts', 'start.sh');

/**
 * Starts a benchmark's gateway (or floor) child the way `npm start` runs the gateway: through scripts/start.sh, so
 * with the same allocator (jemalloc when present; LGW_ALLOCATOR=glibc for glibc's settings), as a child with an IPC
 * channel (start.sh `exec`s node, so the pid is node's and the channel reaches it). Resolves when the child sends
 * its first message ('ready'). `BENCH_GW_ENV="NAME=VALUE …"` adds variables and `BENCH_GW_EXEC_ARGV` node flags to
 * gateway children (`gateway: true`).
 */
export function startChild(
  script: string,
  env: Record<string, string>,
  opts: { gateway?: boolean; execArgv?: string[] } = {},
): Promise<ChildProcess> {
  const extraEnv = opts.gateway ? parseEnv(process.env.BENCH_GW_ENV) : {};
  const extraArgv = opts.gateway ? (process.env.BENCH_GW_EXEC_ARGV ?? '').split(/\s+/).filter(Boolean) : [];
  const child = spawn('sh', [START, ...(opts.execArgv ?? []), ...extraArgv, script], {
    env: { ...process.env, ...env, ...extraEnv },
    stdio: ['ignore', process.env.BENCH_CHILD_STDOUT ? 'inherit' : 'ignore', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
    child.once('message', () => resolve(child));
  });
}

/** The allocator the children run with, for the printed header. */
export function allocatorName(): string {
  const env = { ...process.env, ...parseEnv(process.env.BENCH_GW_ENV) };
  if (env.LD_PRELOAD?.includes('jemalloc')) return 'jemalloc (BENCH_GW_ENV)';
  return env.LGW_ALLOCATOR === 'glibc' ? 'glibc (LGW_ALLOCATOR=glibc)' : 'as scripts/start.sh picks (jemalloc when installed, else glibc)';
}

function parseEnv(text: string | undefined): Record<string, string> {
  return Object.fromEntries(
    (text ?? '')
      .split(/\s+/)
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
}

/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat (clock ticks of 10 ms); NaN without /proc. */
export function cpuSeconds(pid: number | undefined): number {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
  } catch {
    return NaN;
  }
}

/** Waits until `url` answers 2xx (a child's /readyz), for up to a minute. */
export async function waitReady(url: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} never became ready`);
}

/** A process's resident memory now (VmRSS, MiB); NaN without /proc. */
export function rssMiB(pid: number | undefined): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** The JSON answer of a request that must succeed (throws with its status and body otherwise). */
export async function must(r: Promise<Response>): Promise<any> {
  const res = await r;
  const text = await res.text();
  if (!res.ok) throw new Error(`${res.url}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/** Runs `fn` over `items`, `n` at a time. */
export async function pool<T>(items: T[], n: number, fn: (item: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i], i);
      }
    }),
  );
}

/** The median of some figures (the upper one of the middle two for an even count). */
export const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
