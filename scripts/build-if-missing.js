#!/usr/bin/env node
// Builds once when dist/ is missing (a fresh clone), so `npm run admin` works without a separate build step.
const { existsSync } = require('node:fs');
const { execSync } = require('node:child_process');
const path = require('node:path');
if (!existsSync(path.resolve(__dirname, '..', 'dist', 'src', 'cli', 'admin.js'))) {
  execSync('npm run -s build', { stdio: ['ignore', 'ignore', 'inherit'], cwd: path.resolve(__dirname, '..') });
}
