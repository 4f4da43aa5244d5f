import * as fs from 'node:fs';
import * as path from 'node:path';

/** The project's root (the folder of package.json), whether the tests run from test/ or from dist/test/. */
export const ROOT = (() => {
  let dir = __dirname;
  while (!fs.existsSync(path.join(dir, 'package.json')) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  return dir;
})();
