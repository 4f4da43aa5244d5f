#!/usr/bin/env node
// Writes the gateway's OpenAPI document (what GET /openapi.json serves) to a file, without a listening server: builds
// the app from dist/ (npm run build compiles it first) over a throwaway embedded catalog, asks the openapi module for
// the document, and closes. `node scripts/dump-openapi.js OUT.json`. The console's typed client is generated from it
// (scripts/build-console.js), so a changed route breaks the console's build.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

async function main() {
  const out = path.resolve(process.argv[2] ?? 'openapi.json');
  const dist = path.resolve(__dirname, '..', 'dist', 'src');
  require('reflect-metadata');
  const { loadConfig } = require(path.join(dist, 'platform/config/config'));
  const { createGateway } = require(path.join(dist, 'app'));
  const { buildOpenApiDocument } = require(path.join(dist, 'modules/openapi/openapi.document'));
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'lgw-openapi-'));
  try {
    // Only what shapes the document is set; every background worker stays idle for the few seconds this takes.
    const config = loadConfig({
      DATA_DIR: dataDir,
      ADMIN_API_KEY: 'openapi-dump-operator-key',
      BOOTSTRAP_DATABASE: '',
      MAINTENANCE_ENABLED: 'false',
      RECLAIM_INTERVAL_SECONDS: '0',
      JOBS_CONCURRENCY: '0',
      USAGE_REFRESH_INTERVAL_SECONDS: '0',
      DROP_PURGE_INTERVAL_SECONDS: '0',
      LOG_LEVEL: 'error',
    });
    const app = await createGateway(config, { logger: false });
    try {
      const doc = buildOpenApiDocument(app, config);
      fs.mkdirSync(path.dirname(out), { recursive: true });
      fs.writeFileSync(out, JSON.stringify(doc, null, 2) + '\n');
      console.log(`openapi: ${Object.keys(doc.paths).length} paths -> ${path.relative(process.cwd(), out)}`);
    } finally {
      await app.close();
    }
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`openapi dump failed: ${err?.stack ?? err}\n`);
    process.exit(1);
  },
);
