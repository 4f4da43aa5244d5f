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
// =embedded runs each suite against one catalog only. The full tier has three passes, run side by side: local (every
// file), object-store (OBJECT_STORE_SUITES with their tables on s3rver) and pooler (POOLER_SUITES with their Postgres
// catalogs reached through PgBouncer in transaction mode, TEST_POOLER=pgbouncer: see test/helpers/pgbouncer.ts).
// TEST_PASSES=local,s3,pooler (the default) picks passes; TEST_STORAGE=local or =s3 runs that pass only. Every suite
// makes its own catalog database (lgw_*), data folder and object-store prefix, so the passes share no state.
// TEST_POOLER=pgbouncer works for given files too. The pooler pass needs Debian's pgbouncer (.ci/run installs it):
// without it, it is skipped, saying so, except under CI, where its suites fail. TEST_CONCURRENCY (default 3) is the
// number of test files each pass runs at once: most of a file's time is spent waiting on Postgres, the engine and
// timers.
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
// The catalog suites run again through PgBouncer in transaction mode: catalog reads and writes, units of work, keys and
// their caches and last-used flushes, leases and queues (FOR UPDATE SKIP LOCKED), transaction-scoped advisory locks,
// the outbox, exactly-once writes' request records, and the CLI.
const POOLER_SUITES = [
  'namespaces',
  'tables',
  'identity',
  'key-lifecycle',
  'key-management',
  'exactly-once',
  'grants',
  'quotas',
  'soft-delete',
  'usage',
  'jobs',
  'unit-of-work',
  'audit-atomic',
  'events',
];
const PGBOUNCER = [process.env.PGBOUNCER_BIN, '/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find((p) => p && fs.existsSync(p));
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
function run(files, env, { capture = false, source = false, concurrency: filesAtOnce = concurrency } = {}) {
  const loader = source
    ? { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require ${path.join(__dirname, 'ts-register.js')}`.trim() }
    : {};
  // A test file that has not finished in 30 minutes is cancelled, and the run fails, instead of holding CI to its
  // limit: a guard against a hang, not a speed check (cli.test.js, a node process per command, took over 15 minutes
  // beside the other passes on a 2-core VM whose page faults cost 12 µs).
  const args = [
    '--test',
    '--test-reporter=spec',
    `--test-concurrency=${filesAtOnce}`,
    `--test-timeout=${process.env.TEST_FILE_TIMEOUT_MS ?? 1_800_000}`,
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
  const which = (process.env.TEST_PASSES ?? process.env.TEST_STORAGE ?? 'local,s3,pooler').split(',').map((w) => w.trim());
  const dist = path.join(root, 'dist', 'test');
  const suitesOf = (names) => testFiles(dist, '.js').filter((f) => names.includes(path.basename(f, '.test.js')));
  // Each pass after the first keeps its output, printed when the passes before it are done, so each reads in one piece.
  const passes = [];
  const add = (title, files, env, opts = {}) => passes.push({ title, result: run(files, env, { capture: passes.length > 0, ...opts }) });
  if (which.includes('local'))
    add('', [...testFiles(dist, '.js'), ...testFiles(path.join(dist, 'unit'), '.js')], { TEST_STORAGE: 'local' });
  if (which.includes('s3')) {
    add('object-store pass: the same suites with STORAGE_ROOT=s3://… on a local S3-compatible server', suitesOf(OBJECT_STORE_SUITES), {
      TEST_STORAGE: 's3',
    });
  }
  const skipped = [];
  if (which.includes('pooler')) {
    if (PGBOUNCER || process.env.CI) {
      add(
        'pooler pass: the catalog suites through PgBouncer in transaction mode (DATABASE_DIRECT_URL for migrations)',
        suitesOf(POOLER_SUITES),
        {
          TEST_STORAGE: 'local',
          TEST_CATALOGS: 'postgres',
          TEST_POOLER: 'pgbouncer',
        },
        // Beside the two longer passes, two files at a time: the pooler pass still ends first.
        { concurrency: Math.min(2, Number(concurrency)) },
      );
    } else {
      skipped.push('pooler pass skipped: no pgbouncer binary found (apt-get install pgbouncer, or set PGBOUNCER_BIN)');
    }
  }
  const statuses = [];
  for (const [i, p] of passes.entries()) {
    const r = await p.result;
    if (i > 0) {
      console.log(`\n== ${p.title}\n`);
      process.stdout.write(r.output);
    }
    statuses.push(r.status);
  }
  for (const line of skipped) console.log(`\n== ${line}`);
  return statuses.find((s) => s !== 0) ?? 0;
}

main().then((status) => process.exit(status));
