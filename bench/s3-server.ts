/**
 * A local S3-compatible server (s3rver, as the tests' object-store pass uses) in a process of its own, for
 * benchmarks that must not count its CPU as the gateway's. Every request waits BENCH_S3_LATENCY_MS first (a network
 * round trip to a real object store, default 0) and is counted by method; `GET /__requests` answers the counts (and
 * `DELETE /__requests` zeroes them), `PUT /__latency/<ms>` changes the latency. Sends `{ port }` to its parent once
 * listening (IPC), and exits when the parent goes.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import S3rver = require('s3rver');
import { containErrors, containServerErrors, TEST_BUCKET } from '../test/helpers/s3';

type Ctx = { method: string; path: string; status: number; type: string; body: unknown };

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lgw-bench-s3-'));
  let latency = Number(process.env.BENCH_S3_LATENCY_MS ?? 0);
  const counts: Record<string, number> = {};
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: dir, configureBuckets: [{ name: TEST_BUCKET }] });
  (server as unknown as { middleware: Array<(ctx: Ctx, next: () => Promise<void>) => Promise<void>> }).middleware.unshift(
    async (ctx, next) => {
      if (ctx.path === '/__requests') {
        if (ctx.method === 'DELETE') for (const k of Object.keys(counts)) delete counts[k];
        ctx.status = 200;
        ctx.type = 'application/json';
        ctx.body = JSON.stringify(counts);
        return;
      }
      if (ctx.path.startsWith('/__latency/')) {
        latency = Number(ctx.path.slice('/__latency/'.length));
        ctx.status = 204;
        return;
      }
      counts[ctx.method] = (counts[ctx.method] ?? 0) + 1;
      if (latency > 0) await sleep(latency);
      return next();
    },
  );
  containErrors(server);
  const { port } = (await server.run()) as { port: number };
  containServerErrors(server);
  process.send?.({ port });
  process.on('disconnect', () => {
    fs.rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  });
}

void main();
