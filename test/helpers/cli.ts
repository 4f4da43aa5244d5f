import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before } from 'node:test';
import { program } from './root';
import { createPgDatabase, TestGateway } from './gateway';

const CLI = program(path.resolve(__dirname, '../../src/cli/admin.js'));

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  json: any;
}

/**
 * The operator CLI against a fresh Postgres catalog and data folder of the suite's own (made before, dropped after),
 * with no operator key in its environment. `gw` is a gateway the suite may start on the same catalog (closed after).
 */
export function useCli(prefix: string) {
  const h = {
    db: undefined as unknown as Awaited<ReturnType<typeof createPgDatabase>>,
    dataDir: '',
    gw: undefined as TestGateway | undefined,
    cli(...args: string[]): Promise<CliResult> {
      const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: h.db.url, DATA_DIR: h.dataDir, NODE_NO_WARNINGS: '1' };
      delete env.ADMIN_API_KEY;
      delete env.BOOTSTRAP_DATABASE;
      return new Promise((resolve) => {
        execFile(process.execPath, [CLI, ...args], { env, timeout: 60_000 }, (err, stdout, stderr) => {
          const code = err ? (typeof (err as any).code === 'number' ? (err as any).code : -1) : 0;
          let json: unknown;
          try {
            json = JSON.parse(stdout);
          } catch {
            json = undefined;
          }
          resolve({ code, stdout, stderr, json });
        });
      });
    },
    ok(r: CliResult) {
      assert.equal(r.code, 0, `exit ${r.code}: ${r.stderr}`);
      assert.ok(r.json !== undefined, `stdout is JSON: ${r.stdout}`);
      return r.json;
    },
  };
  before(async () => {
    assert.ok(fs.existsSync(CLI), `${CLI} is built`);
    h.db = await createPgDatabase(prefix);
    h.dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `${prefix.replace(/_/g, '-')}-`));
  });
  after(async () => {
    await h.gw?.close();
    await h.db?.drop();
    fs.rmSync(h.dataDir, { recursive: true, force: true });
  });
  return h;
}
