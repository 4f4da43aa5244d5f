import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { describe, test } from 'node:test';

/** A node process that loads the gateway's root logger, logs `lines` lines and then runs `then`. */
function run(lines: number, then: string): { stdout: string; status: number | null } {
  const logger = path.resolve(__dirname, '../../src/platform/observability/logger.js');
  const script = `
    const { createRootLogger } = require(${JSON.stringify(logger)});
    const log = createRootLogger({ logLevel: 'log' });
    for (let i = 0; i < ${lines}; i++) log.info({ i }, 'line');
    ${then}`;
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 30_000 });
  return { stdout: r.stdout, status: r.status };
}

const count = (stdout: string) => stdout.split('\n').filter((l) => l.includes('"msg":"line"')).length;

describe('the request log on stdout (batched writes)', () => {
  test('lines still in the batch are written when the process exits, also through process.exit', () => {
    // Three lines are far below a batch: without the exit hook they would be lost with the process.
    const r = run(3, 'process.exit(3);');
    assert.equal(r.status, 3);
    assert.equal(count(r.stdout), 3, r.stdout);
  });

  test('a quiet process writes its lines within the flush interval, without exiting', () => {
    // The process stays up for 2 s and is killed: only what the periodic flush wrote is there.
    const r = run(2, "setTimeout(() => process.kill(process.pid, 'SIGKILL'), 2000);");
    assert.equal(count(r.stdout), 2, r.stdout);
  });

  test('many lines come out whole and in order', () => {
    const r = run(5000, '');
    const seen = r.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l).i);
    assert.deepEqual(
      seen,
      Array.from({ length: 5000 }, (_, i) => i),
    );
  });
});
