import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { loadConfig } from '../../src/platform/config/config';
import type { LanceEngine } from '../../src/engine/lance/lance-engine';
import type { TableWriteSignals } from '../../src/modules/catalog';
import type { MaintainedTable, MaintenanceRepository } from '../../src/modules/maintenance/maintenance.repository';
import { MaintenanceTriggers } from '../../src/modules/maintenance/maintenance.triggers';

/** A catalog of `count` tables with data; the ones in `disabled` have maintenance off at their database. */
function fakeRepo(count: number, disabled: Set<string>, failAfter?: string) {
  const ids = Array.from({ length: count }, (_, i) => `t${String(i).padStart(5, '0')}`);
  const queued: Array<{ id: string; delayMs: number; trigger: string }> = [];
  const repo = {
    tablesWithData: async (after: string | null, limit: number) => {
      if (failAfter !== undefined && after === failAfter) throw new Error('catalog gone');
      return ids
        .filter((id) => after === null || id > after)
        .slice(0, limit)
        .map((id) => ({ id }) as MaintainedTable);
    },
    policyInputs: async (t: MaintainedTable) => ({
      database: disabled.has(t.id) ? { enabled: false } : null,
      namespace: null,
      table: null,
    }),
    enqueue: async (t: MaintainedTable, delayMs: number, trigger: string) => {
      queued.push({ id: t.id, delayMs, trigger });
      return t.id;
    },
  };
  return { repo: repo as unknown as MaintenanceRepository, queued };
}

const triggers = (repo: MaintenanceRepository) => new MaintenanceTriggers(loadConfig({}), repo, {} as LanceEngine, {} as TableWriteSignals);

/** The maintenance sweep (docs/maintenance.md) on the leased-worker base: pages, policy, failures. */
describe('the maintenance sweep', () => {
  test('queues the job of every table with data whose maintenance is on, page after page, at once', async () => {
    const { repo, queued } = fakeRepo(1203, new Set(['t00007', 't01200']));
    const s = triggers(repo);
    const [a, b] = [s.sweep(), s.sweep()];
    assert.equal(a, b, 'a sweep under way is joined');
    await a;
    assert.equal(queued.length, 1201);
    assert.ok(queued.every((q) => q.delayMs === 0 && q.trigger === 'sweep'));
    assert.ok(!queued.some((q) => q.id === 't00007' || q.id === 't01200'));
  });

  test('a failing sweep keeps what it queued and does not throw; after shutdown none runs', async () => {
    const { repo, queued } = fakeRepo(600, new Set(), 't00499');
    const s = triggers(repo);
    await s.sweep();
    assert.equal(queued.length, 500);
    await s.onApplicationShutdown();
    await s.sweep();
    assert.equal(queued.length, 500, 'after shutdown no sweep runs');
  });
});
