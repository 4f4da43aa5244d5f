// Runs the TypeScript sources without a build: `node --require ./scripts/ts-register.js test/x.test.ts`
// (npm run test:unit and test:integration put it in NODE_OPTIONS, so child processes and worker threads the tests
// start load it too). Each .ts file is compiled on require by SWC (@swc/core) with tsconfig.json's settings that
// change the output — CommonJS, ES2022, legacy decorators with their metadata, which NestJS's dependency injection
// needs (esbuild and tsx do not emit it). Types are not checked here: `npm run typecheck` does that.
// Deliberately small: @swc-node/register loads the typescript package to read tsconfig.json, which does not fit in
// the 16 MiB heap of the gateway's schema-decoding worker.
// Tests and helpers name the programs they start by their built path (dist/…/x.js); from the sources that file is
// x.ts, so a missing `.js` path is resolved to the `.ts` beside it.
const { createHash } = require('node:crypto');
const fs = require('node:fs');
const Module = require('node:module');
const path = require('node:path');
const swc = require('@swc/core');

const options = {
  jsc: {
    parser: { syntax: 'typescript', decorators: true },
    transform: { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: true },
    target: 'es2022',
    keepClassNames: true,
  },
  module: { type: 'commonjs' },
  sourceMaps: 'inline',
  swcrc: false,
  configFile: false,
};

// Compiled files are kept in node_modules/.cache/ts-register by a hash of their path, text and the compiler, so the
// processes a test starts (the gateway, the CLI) do not compile the whole tree again.
const cacheDir = path.join(__dirname, '..', 'node_modules', '.cache', 'ts-register');
const salt = `${require('@swc/core/package.json').version} ${JSON.stringify(options)}`;

function compile(filename) {
  const source = fs.readFileSync(filename, 'utf8');
  const key = createHash('sha256').update(salt).update(filename).update('\0').update(source).digest('hex');
  const cached = path.join(cacheDir, `${key}.js`);
  try {
    return fs.readFileSync(cached, 'utf8');
  } catch {
    // not compiled yet
  }
  const { code } = swc.transformSync(source, { ...options, filename });
  try {
    fs.mkdirSync(cacheDir, { recursive: true });
    const tmp = `${cached}.${process.pid}.${Math.random().toString(36).slice(2)}`;
    fs.writeFileSync(tmp, code);
    fs.renameSync(tmp, cached);
  } catch {
    // a read-only tree: compile every time
  }
  return code;
}

process.setSourceMapsEnabled(true);
Module._extensions['.ts'] = function (module, filename) {
  module._compile(compile(filename), filename);
};

const tsTwin = (file) => {
  if (typeof file !== 'string' || !file.endsWith('.js') || fs.existsSync(file)) return undefined;
  const ts = `${file.slice(0, -3)}.ts`;
  return fs.existsSync(ts) ? ts : undefined;
};

// `node dist-path/x.js` (the main module), worker threads and `require('/abs/x.js')`.
const findPath = Module._findPath;
Module._findPath = function (request, paths, isMain) {
  const found = findPath.call(this, request, paths, isMain);
  if (found || !path.isAbsolute(request)) return found;
  const ts = tsTwin(request);
  return ts ? findPath.call(this, ts, paths, isMain) : found;
};
