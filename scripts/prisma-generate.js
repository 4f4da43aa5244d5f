#!/usr/bin/env node
// Generates the Prisma client. The CLI insists on locating a schema engine even though `generate` does not use
// it, and that engine cannot be downloaded in air-gapped builds: point PRISMA_SCHEMA_ENGINE_BINARY at any
// existing file when none is configured.
const { execFileSync } = require('node:child_process');
const env = { ...process.env, PRISMA_HIDE_UPDATE_MESSAGE: '1', CHECKPOINT_DISABLE: '1' };
if (!env.PRISMA_SCHEMA_ENGINE_BINARY) env.PRISMA_SCHEMA_ENGINE_BINARY = process.execPath;
execFileSync(process.execPath, [require.resolve('prisma/build/index.js'), 'generate'], { stdio: 'inherit', env });
