#!/usr/bin/env node
// Runs every test (compiled to dist/test by `npm run build`, which `npm test` runs first) with Node's test runner.
// Each suite runs against the real Postgres (TEST_PG_URL, default postgresql://postgres@127.0.0.1:5432/postgres)
// and against the embedded catalog; set TEST_CATALOGS=postgres or =embedded to run one of them.
const { spawnSync } = require('node:child_process');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const args = ['--test', '--test-reporter=spec', '--test-concurrency=2', ...process.argv.slice(2)];
if (process.argv.length <= 2) args.push(path.join(root, 'dist', 'test'));
const r = spawnSync(process.execPath, args, { stdio: 'inherit', cwd: root, env: { ...process.env, NODE_NO_WARNINGS: '1' } });
process.exit(r.status ?? 1);
