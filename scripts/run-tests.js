#!/usr/bin/env node
// Runs every test (compiled to dist/test by `npm run build`, which `npm test` runs first) with Node's test runner.
// Each suite runs against the real Postgres (TEST_PG_URL, default postgresql://postgres@127.0.0.1:5432/postgres)
// and against the embedded catalog; set TEST_CATALOGS=postgres or =embedded to run one of them.
// Without arguments, a second pass then runs the suites that touch table data with their tables on a local
// S3-compatible server (TEST_STORAGE=s3, see test/helpers/s3.ts); TEST_STORAGE=local skips it, =s3 runs only it.
const { spawnSync } = require('node:child_process');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const OBJECT_STORE_SUITES = [
  'namespaces',
  'tables',
  'routing',
  'dataplane-remote',
  'dataplane-enterprise',
  'official-client',
  'spec-conformance',
  'managed-versions',
  'clone',
  'multipart',
  'soft-delete',
  'storage-bytes',
  'maintenance',
].map((n) => path.join(root, 'dist', 'test', `${n}.test.js`));

function run(files, env) {
  // A test file that has not finished in 15 minutes is cancelled (and the run fails) instead of holding CI to its limit.
  const args = ['--test', '--test-reporter=spec', '--test-concurrency=2', `--test-timeout=${process.env.TEST_FILE_TIMEOUT_MS ?? 900000}`, ...files];
  const r = spawnSync(process.execPath, args, { stdio: 'inherit', cwd: root, env: { ...process.env, NODE_NO_WARNINGS: '1', ...env } });
  return r.status ?? 1;
}

const given = process.argv.slice(2);
if (given.length) process.exit(run(given, {}));
const which = process.env.TEST_STORAGE ?? 'local,s3';
let status = 0;
if (which.includes('local')) status = run([path.join(root, 'dist', 'test')], { TEST_STORAGE: 'local' });
if (which.includes('s3')) {
  console.log('\n== object-store pass: the same suites with STORAGE_ROOT=s3://… on a local S3-compatible server\n');
  status = run(OBJECT_STORE_SUITES, { TEST_STORAGE: 's3' }) || status;
}
process.exit(status);
