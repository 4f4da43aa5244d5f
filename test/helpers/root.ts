import * as fs from 'node:fs';
import * as path from 'node:path';

/** The project's root (the folder of package.json), whether the tests run from test/ or from dist/test/. */
export const ROOT = (() => {
  let dir = __dirname;
  while (!fs.existsSync(path.join(dir, 'package.json')) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  return dir;
})();

/**
 * A program a test starts, named by its built path (dist/…/x.js): that file, or when the tests run from the sources
 * (npm run test:unit, test:integration), the x.ts beside it, which scripts/ts-register.js compiles on load.
 */
export function program(builtPath: string): string {
  if (fs.existsSync(builtPath) || !builtPath.endsWith('.js')) return builtPath;
  const source = `${builtPath.slice(0, -3)}.ts`;
  return fs.existsSync(source) ? source : builtPath;
}
