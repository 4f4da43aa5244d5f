import assert from 'node:assert/strict';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { cycleImports, cycles, importsOf, violations } from '../helpers/layers';
import { ROOT } from '../helpers/root';

const SRC = path.join(ROOT, 'src');

/** The layers of src/ (docs/architecture.md): platform → engine → features, and the composition root on top. */
describe('import graph', () => {
  const edges = importsOf(SRC);

  it('reads the imports of src/', () => {
    assert.ok(edges.length > 300, `${edges.length} imports`);
    assert.ok(edges.some((e) => e.from === 'app.module.ts' && e.to.startsWith('platform/')));
  });

  it('every import goes down the layers (platform imports no engine or feature, engine no feature), and features use each other through their index.ts', () => {
    assert.deepEqual(violations(edges), []);
  });

  it('no folder-level cycle', () => {
    const found = cycles(edges);
    assert.deepEqual(
      found.map((c) => ({ cycle: c, imports: cycleImports(edges, c) })),
      [],
    );
  });

  it('the checks catch what they are for', () => {
    const extra = [
      { from: 'engine/lance/lance-engine.ts', to: 'modules/catalog/tables/tables.service.ts' },
      { from: 'platform/http/errors.ts', to: 'engine/arrow/arrow-ipc.ts' },
      { from: 'modules/usage/usage.service.ts', to: 'generated/prisma/client.ts' },
      { from: 'modules/audit/audit.service.ts', to: 'modules/usage/usage.service.ts' },
      { from: 'modules/usage/usage.service.ts', to: 'modules/audit/index.ts' },
      { from: 'modules/data/reads/table-reads.service.ts', to: 'modules/catalog/tables/tables.service.ts' },
    ];
    assert.deepEqual(
      violations(extra).map((v) => v.split(': ')[1]),
      [
        'engine must not import features',
        'platform must not import engine',
        'only repositories and platform/db use Prisma',
        'another feature is used through what it exports (modules/usage/index.ts)',
        'another feature is used through what it exports (modules/catalog/index.ts)',
      ],
    );
    assert.deepEqual(cycles(extra), [['modules/audit', 'modules/usage']]);
  });

  it('no file-level import circle (what forced forwardRef before)', () => {
    assert.deepEqual(cycles(edges, true), []);
    assert.deepEqual(
      cycles(
        [
          ...edges,
          { from: 'platform/http/errors.ts', to: 'platform/http/ids.ts' },
          { from: 'platform/http/ids.ts', to: 'platform/http/errors.ts' },
        ],
        true,
      ),
      [['platform/http/errors.ts', 'platform/http/ids.ts']],
    );
  });
});
