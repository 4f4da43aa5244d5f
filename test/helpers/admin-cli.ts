import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { program } from './root';

/** The operator CLI (src/cli/admin.ts), built or from the sources. */
export const ADMIN_CLI = program(path.resolve(__dirname, '../../src/cli/admin.js'));

/** Runs the operator CLI with `env`; its exit code (-1 when it was killed), output, and stdout read as JSON when it is. */
export function runAdmin(
  args: string[],
  env: NodeJS.ProcessEnv,
  timeoutMs = 120_000,
): Promise<{ code: number; stdout: string; stderr: string; json: any }> {
  return new Promise((resolve) =>
    execFile(process.execPath, [ADMIN_CLI, ...args], { env, timeout: timeoutMs }, (err, stdout, stderr) => {
      let json: unknown;
      try {
        json = JSON.parse(stdout);
      } catch {
        json = undefined;
      }
      resolve({ code: err ? Number((err as { code?: number }).code ?? -1) : 0, stdout, stderr, json });
    }),
  );
}
