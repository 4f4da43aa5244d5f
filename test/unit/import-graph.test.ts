import assert from 'node:assert/strict';
import * as path from 'node:path';
import { test } from 'node:test';
import { ROOT } from '../helpers/root';

// madge ships no type declarations; its API is one function returning a graph with circular().
// eslint-disable-next-line @typescript-eslint/no-require-imports
const madge = require('madge') as (p: string, c: object) => Promise<{ circular(): string[][] }>;

/**
 * The module graph of src/ has no import circle: feature modules import infrastructure and each other in one
 * direction only (a circle is what forced forwardRef before). The generated Prisma client is left out: its own
 * files import each other by design.
 */
test('src/ has no circular imports', async () => {
  const graph = await madge(path.join(ROOT, 'src'), {
    fileExtensions: ['ts'],
    tsConfig: path.join(ROOT, 'tsconfig.json'),
    excludeRegExp: [/^generated\//],
  });
  assert.deepEqual(graph.circular(), []);
});
