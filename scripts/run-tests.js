#!/usr/bin/env node
// Runs the tests with Node's test runner, in three tiers:
//   node scripts/run-tests.js                  the full tier (npm test, CI): every test compiled to dist/test by
//                                               `npm run build`, against the real Postgres and the embedded catalog,
//                                               then the suites that touch table data again with their tables on a
//                                               local S3-compatible server (TEST_STORAGE=s3, see test/helpers/s3.ts).
//   node scripts/run-tests.js --source DIR...  the test files of DIR (not its subfolders) from the TypeScript sources,
//                                               without a build, through scripts/ts-register.js (npm run test:unit,
//                                               npm run test:integration).
//   node scripts/run-tests.js FILE...          the given files (dist/test/x.test.js, or test/x.test.ts with --source).
// Postgres is TEST_PG_URL (default postgresql://postgres@127.0.0.1:5432/postgres); TEST_CATALOGS=postgres or
// =embedded runs each suite against one catalog only. TEST_STORAGE=local skips the object-store pass, =s3 runs only it.
// The object-store pass runs beside the local one: every suite makes its own catalog database (lgw_*), data folder
// and object-store prefix, so the two passes share no state. TEST_CONCURRENCY (default 3) is the number of test
// files each pass runs at once: most of a file's time is spent waiting on Postgres, the engine and timers.
const { spawn } = require('node:child_process');
const fs = require('node:fs');
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
];
// The longest files first (measured), so that no long file starts last; the rest keep their alphabetical order.
const SLOW_FIRST = ['jobs', 'maintenance', 'cli', 'managed-versions', 'multipart', 'crash-safety', 'migrator', 'fuzz'];

const concurrency = process.env.TEST_CONCURRENCY ?? '3';

/** The test files of `dir` (not of its subfolders), the slow ones first. */
function testFiles(dir, ext) {
  const names = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith(`.test${ext}`))
    .sort();
  const rank = (f) => {
    const i = SLOW_FIRST.indexOf(f.slice(0, -`.test${ext}`.length));
    return i < 0 ? SLOW_FIRST.length : i;
  };
  return names.sort((a, b) => rank(a) - rank(b)).map((f) => path.join(dir, f));
}

/** Runs `files` in one test runner; resolves with its exit status. `capture`: keep the output and return it instead. */
function run(files, env, { capture = false, source = false } = {}) {
  const loader = source
    ? { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require ${path.join(__dirname, 'ts-register.js')}`.trim() }
    : {};
  // A test file that has not finished in 15 minutes is cancelled (and the run fails) instead of holding CI to its limit.
  const args = [
    '--test',
    '--test-reporter=spec',
    `--test-concurrency=${concurrency}`,
    `--test-timeout=${process.env.TEST_FILE_TIMEOUT_MS ?? 900000}`,
    ...files,
  ];
  const child = spawn(process.execPath, args, {
    stdio: capture ? ['ignore', 'pipe', 'pipe'] : 'inherit',
    cwd: root,
    env: { ...process.env, NODE_NO_WARNINGS: '1', ...loader, ...env },
  });
  const out = [];
  if (capture) {
    child.stdout.on('data', (b) => out.push(b));
    child.stderr.on('data', (b) => out.push(b));
  }
  return new Promise((resolve) => child.on('close', (code) => resolve({ status: code ?? 1, output: Buffer.concat(out) })));
}

async function main() {
  let given = process.argv.slice(2);
  const source = given[0] === '--source';
  if (source) given = given.slice(1);
  if (given.length) {
    const files = given.flatMap((p) => (fs.statSync(p).isDirectory() ? testFiles(path.resolve(p), source ? '.ts' : '.js') : [p]));
    return (await run(files, {}, { source })).status;
  }
  const which = process.env.TEST_STORAGE ?? 'local,s3';
  const dist = path.join(root, 'dist', 'test');
  const passes = [];
  if (which.includes('local'))
    passes.push(run([...testFiles(dist, '.js'), ...testFiles(path.join(dist, 'unit'), '.js')], { TEST_STORAGE: 'local' }));
  if (which.includes('s3')) {
    const suites = testFiles(dist, '.js').filter((f) => OBJECT_STORE_SUITES.includes(path.basename(f, '.test.js')));
    passes.push(run(suites, { TEST_STORAGE: 's3' }, { capture: passes.length > 0 }));
  }
  // The object-store pass's output is printed when the local pass is done, so each pass reads in one piece.
  const statuses = [];
  for (const p of passes) {
    const r = await p;
    if (p !== passes[0] || !which.includes('local')) {
      console.log('\n== object-store pass: the same suites with STORAGE_ROOT=s3://… on a local S3-compatible server\n');
      process.stdout.write(r.output);
    }
    statuses.push(r.status);
  }
  return statuses.find((s) => s !== 0) ?? 0;
}

main().then((status) => process.exit(status));
