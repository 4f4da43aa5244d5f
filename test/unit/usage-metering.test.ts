import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { AppConfig } from '../../src/platform/config/config';
import { UsageMeter } from '../../src/modules/metering/usage-meter.service';
import type { ClaimedTable, UsageRepository } from '../../src/modules/metering/usage.repository';
import { Measured, UsageRefresher } from '../../src/modules/usage/usage-refresher.service';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const config = (usage: Partial<AppConfig['usage']>) =>
  ({
    usage: {
      metering: true,
      flushIntervalMs: 10_000,
      refreshIntervalMs: 60_000,
      refreshTablesPerMinute: 600,
      refreshConcurrency: 4,
      fullScanMs: 86_400_000,
      ...usage,
    },
  }) as AppConfig;
const metrics = { usageFlushes: { inc() {} }, usageTablesScanned: { inc() {} } };

/** A meter whose flushes land in `flushes`, and the engine's listeners it subscribed. */
function meter(enabled = true) {
  const flushes: unknown[][] = [];
  const engine: { stored?: (l: string, b: number) => void; written?: (l: string) => Promise<unknown> } = {};
  const repo = {
    applyFlush: async (...args: unknown[]) => (flushes.push(args), true),
  } as unknown as UsageRepository;
  const m = new UsageMeter(
    config({ metering: enabled }),
    repo,
    { run: (fn: () => Promise<unknown>) => fn() } as never,
    { id: 'replica-1' } as never,
    metrics as never,
    { onStored: (fn: never) => (engine.stored = fn), onWritten: (fn: never) => (engine.written = fn) } as never,
    { databaseOf: (location: string) => location.split('/')[0] } as never,
  );
  m.onModuleInit();
  return { m, flushes, engine };
}

describe('the usage meter: marks for re-measurement', () => {
  test('a describe or a write is a Set add: deduplicated until the flush, which carries each table once', async () => {
    const { m, flushes, engine } = meter();
    for (let i = 0; i < 1000; i++) {
      m.touch('t-opened');
      m.touch('t-both');
    }
    m.written('t-both');
    m.written('t-written');
    m.written('t-written');
    await engine.written!('db1/tables/a');
    engine.stored!('db1/tables/b', 300);
    engine.stored!('db1/tables/b', 200);
    assert.equal(flushes.length, 0, 'nothing reaches the catalog before the flush');
    assert.equal(m.unflushedBytes('db1'), 500);
    await m.flush();
    assert.equal(flushes.length, 1);
    const [replica, seq, rows, opened, grown, written] = flushes[0];
    assert.deepEqual([replica, seq, rows], ['replica-1', 1, []]);
    assert.deepEqual((opened as string[]).sort(), ['t-both', 't-opened']);
    assert.deepEqual((written as string[]).sort(), ['t-both', 't-written']);
    // A commit without bytes marks its table written too (found by location at the flush).
    assert.deepEqual(grown, [
      ['db1/tables/a', 0],
      ['db1/tables/b', 500],
    ]);
    await m.flush();
    assert.equal(flushes.length, 1, 'nothing new: no flush');
  });

  test('off (USAGE_METERING=false): nothing is marked or subscribed', async () => {
    const { m, flushes, engine } = meter(false);
    m.touch('t');
    m.written('t');
    assert.equal(engine.written, undefined);
    await m.flush();
    assert.equal(flushes.length, 0);
  });
});

describe('the storage refresher: a round', () => {
  /** A refresher over a fake catalog of `due` tables; measure() takes `ms` and fails for the locations in `failing`. */
  function refresher(due: number, usage: Partial<AppConfig['usage']>, ms = 5, failing = new Set<string>()) {
    const tables: ClaimedTable[] = Array.from({ length: due }, (_, i) => ({
      tableId: `t${i}`,
      databaseId: `db${i % 3}`,
      location: `db${i % 3}/t${i}`,
      claimedAt: new Date().toISOString(),
      writtenBytes: 0,
    }));
    const log = {
      claims: [] as number[],
      recorded: [] as string[][],
      released: [] as string[],
      inFlight: 0,
      most: 0,
      snapshot: [] as string[],
    };
    const repo = {
      claimDue: async (_owner: string, limit: number) => (log.claims.push(limit), tables.splice(0, limit)),
      recordScans: async (_owner: string, scans: ClaimedTable[]) => void log.recorded.push(scans.map((s) => s.tableId)),
      releaseLease: async (id: string) => void log.released.push(id),
      snapshotDaily: async (ids: string[]) => ((log.snapshot = ids.sort()), ids.length),
      pruneFlushes: async () => undefined,
      fleetTotals: async () => ({ databases: 0, tables: 0, namespaces: 0, storageBytes: 0 }),
    } as unknown as UsageRepository;
    const r = new UsageRefresher(
      config(usage),
      repo,
      {} as never,
      {} as never,
      { id: 'replica-1' } as never,
      metrics as never,
      { flush: async () => undefined } as never,
    );
    r.measure = async (location: string): Promise<Measured> => {
      log.most = Math.max(log.most, ++log.inFlight);
      await sleep(ms);
      log.inFlight--;
      if (failing.has(location)) throw new Error('unreadable');
      return { bytes: 1, currentBytes: 1, rows: 1 };
    };
    return { r, log };
  }

  test('measures USAGE_REFRESH_CONCURRENCY tables at once and records each batch in one statement', async () => {
    const { r, log } = refresher(120, { refreshConcurrency: 8 });
    const round = await r.runOnce();
    assert.deepEqual(round, { scanned: 120, failed: 0, databases: 3 });
    assert.equal(log.most, 8);
    assert.deepEqual(log.claims, [50, 50, 50]);
    assert.deepEqual(
      log.recorded.map((b) => b.length),
      [50, 50, 20],
    );
    assert.deepEqual(log.snapshot, ['db0', 'db1', 'db2']);
  });

  test('stays within its share of USAGE_REFRESH_TABLES_PER_MINUTE; a table it cannot read gives its lease back', async () => {
    const { r, log } = refresher(500, { refreshTablesPerMinute: 70, refreshConcurrency: 1 }, 1, new Set(['db1/t1']));
    const round = await r.runOnce();
    assert.deepEqual(round, { scanned: 69, failed: 1, databases: 3 });
    assert.equal(log.most, 1);
    assert.deepEqual(log.claims, [50, 20]);
    assert.deepEqual(log.released, ['t1']);
    assert.ok(!log.recorded.flat().includes('t1'));
  });

  test('a concurrency above the batch claims that many at once', async () => {
    const { r, log } = refresher(300, { refreshTablesPerMinute: 300, refreshConcurrency: 64 }, 2);
    assert.equal((await r.runOnce()).scanned, 300);
    assert.deepEqual(log.claims, [64, 64, 64, 64, 44]);
    assert.equal(log.most, 64);
  });
});
