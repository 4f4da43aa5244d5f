import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as lancedb from '@lancedb/lancedb';
import * as arrow from 'apache-arrow';
import { PrismaClient } from '../src/generated/prisma/client';
import { UsageMeter } from '../src/modules/metering/usage-meter.service';
import { MARK_WRITTEN, UsageRepository } from '../src/modules/metering/usage.repository';
import { UsageRefresher } from '../src/modules/usage/usage-refresher.service';
import { Api, CATALOG_KINDS, forEachCatalog, newTenant, operator, startGateway, Tenant, TestGateway, twoReplicas } from './helpers/gateway';
import * as stored from './helpers/stored';

/**
 * The storage refresher (docs/usage-and-quotas.md): storage, table and namespace figures stay current although a
 * namespace-mode client (the official @lancedb/lancedb `connectNamespace('rest', …)`) writes table data itself; tables
 * are leased through Postgres so two replicas never re-read the same table in one round, and a round re-reads at most
 * its share of USAGE_REFRESH_TABLES_PER_MINUTE. Fleet gauges carry no database label.
 */
const today = () => new Date().toISOString().slice(0, 10);

async function storageToday(
  gw: TestGateway,
  name: string,
): Promise<{ storage_bytes: number | null; current_version_bytes: number | null; tables: number | null; namespaces: number | null }> {
  const r = await operator(gw).get(`/admin/v1/databases/${name}/usage?from=${today()}`);
  assert.equal(r.status, 200, r.text);
  return r.body.periods[0];
}

const rows = (from: number, n: number) =>
  Array.from({ length: n }, (_, i) => ({ id: from + i, label: `row-${from + i}`, vector: [from + i, 1, 2, 3] }));
const ipcOf = (data: ReturnType<typeof rows>): Buffer => Buffer.from(arrow.tableToIPC(lancedb.makeArrowTable(data), 'stream'));

forEachCatalog('storage refresher', (kind) => {
  let gw: TestGateway;
  let tenant: Tenant;
  let ns: lancedb.Connection;

  before(async () => {
    gw = await startGateway(kind, { USAGE_FLUSH_INTERVAL_SECONDS: '3600', USAGE_REFRESH_INTERVAL_SECONDS: '0' });
    tenant = await newTenant(gw);
    ns = await lancedb.connectNamespace('rest', {
      uri: gw.url,
      headers: { 'x-api-key': tenant.writeKey, 'x-service-database': tenant.name },
    });
  });
  after(async () => {
    ns?.close();
    await gw?.close();
  });

  const refresh = async () => {
    await gw.app.get(UsageMeter).flush();
    return gw.app.get(UsageRefresher).runOnce();
  };
  const stats = async (table: string, nsId: string[]) => {
    const id = [...nsId, table].join('$');
    const r = await tenant.api.post(`/v1/table/${encodeURIComponent(id)}/stats`, {});
    assert.equal(r.status, 200, r.text);
    return r.body.total_bytes as number;
  };
  /** Bytes of every file under the table's location on its store (walked on disk, or listed on the S3 server). */
  const onStore = async (table: string, nsId: string[]) => {
    const id = [...nsId, table].join('$');
    // With the read key: a describe with a write key marks the table due for a measurement.
    const r = await tenant.reader.post(`/v1/table/${encodeURIComponent(id)}/describe`, {});
    assert.equal(r.status, 200, r.text);
    return stored.bytesUnder(r.body.location as string);
  };
  const ageScans = () => gw.app.get(PrismaClient).$executeRawUnsafe(`UPDATE table_usage SET scanned_at = now() - interval '25 hours'`);

  it("claims due tables through an index in the claim's own order (no sort of every table per claim)", async () => {
    const [{ def }] = await gw.app
      .get(PrismaClient)
      .$queryRawUnsafe<{ def: string }[]>(`SELECT indexdef AS def FROM pg_indexes WHERE indexname = 'table_usage_scanned_at_idx'`);
    assert.match(def, /\(scanned_at NULLS FIRST\)/);
  });

  it('measures a table a namespace-mode client wrote itself, and again after it wrote more', async () => {
    await ns.createNamespace(['team']);
    const table = await ns.createTable('direct', rows(0, 30), ['team']);
    const round = await refresh();
    assert.ok(round.scanned >= 1, JSON.stringify(round));
    const first = await storageToday(gw, tenant.name);
    // storage_bytes: every byte under the table's location; beside it the current version's data bytes.
    assert.equal(first.storage_bytes, await onStore('direct', ['team']));
    assert.equal(first.current_version_bytes, await stats('direct', ['team']));
    assert.ok(first.current_version_bytes! > 0);
    assert.ok(first.storage_bytes! > first.current_version_bytes!, 'manifests and transaction files are bytes too');
    assert.equal(first.tables, 1);
    assert.equal(first.namespaces, 1);

    // Written again straight to storage with the handle it holds: nothing passes through the gateway.
    await table.add(rows(30, 400));
    const grown = await onStore('direct', ['team']);
    assert.ok(grown > first.storage_bytes!);
    // Just measured, and nothing said it changed: not re-read yet (bounded work) …
    await refresh();
    assert.equal((await storageToday(gw, tenant.name)).storage_bytes, first.storage_bytes);
    // … but within USAGE_FULL_SCAN_HOURS every table is (the clock moved on by a day here).
    await ageScans();
    await refresh();
    assert.equal((await storageToday(gw, tenant.name)).storage_bytes, grown);

    // A writer that opens the table through the gateway marks it due at once.
    const again = await ns.openTable('direct', ['team']);
    await again.add(rows(1000, 400));
    const more = await onStore('direct', ['team']);
    assert.ok(more > grown);
    const r2 = await refresh();
    assert.ok(r2.scanned >= 1, JSON.stringify(r2));
    assert.equal((await storageToday(gw, tenant.name)).storage_bytes, more);
    const current = await stats('direct', ['team']);
    assert.equal((await storageToday(gw, tenant.name)).current_version_bytes, current);

    const top = await operator(gw).get('/admin/v1/usage/top-storage?limit=5');
    assert.equal(top.status, 200);
    assert.deepEqual(
      top.body.databases.find((d: any) => d.database === tenant.name),
      {
        database: tenant.name,
        storage_bytes: more,
        current_version_bytes: current,
        tables: 1,
      },
    );
  });

  it('exposes fleet gauges without a database label', async () => {
    const m = await new Api(gw.url).get('/metrics');
    assert.equal(m.status, 200);
    const line = (name: string) => m.text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
    for (const g of ['lgw_usage_storage_bytes', 'lgw_usage_tables', 'lgw_usage_namespaces', 'lgw_usage_databases']) {
      const l = line(g);
      assert.ok(l, `${g} in /metrics`);
      assert.ok(!l!.includes('database='), `${g} has no database label: ${l}`);
    }
    assert.equal(Number(line('lgw_usage_storage_bytes')!.split(' ')[1]), await onStore('direct', ['team']));
    assert.match(m.text, /lgw_usage_flushes_total\{outcome="applied"\} \d+/);
  });
});

describe('storage refresher: two replicas and a bounded round [postgres]', { skip: !CATALOG_KINDS.includes('postgres') }, () => {
  let pair: Awaited<ReturnType<typeof twoReplicas>>;
  let a: TestGateway;
  let b: TestGateway;

  before(async () => {
    pair = await twoReplicas('lgw_refresh', {
      USAGE_FLUSH_INTERVAL_SECONDS: '3600',
      USAGE_REFRESH_INTERVAL_SECONDS: '0',
      USAGE_REFRESH_TABLES_PER_MINUTE: '3',
    });
    ({ a, b } = pair);
  });
  after(() => pair?.close());

  it('never re-reads one table on both replicas in a round, and re-reads at most its share per round', async () => {
    const t = await newTenant(a);
    const ns = await lancedb.connectNamespace('rest', { uri: a.url, headers: { 'x-api-key': t.writeKey, 'x-service-database': t.name } });
    try {
      for (let i = 0; i < 5; i++) await ns.createTable(`t${i}`, rows(i * 10, 10));
    } finally {
      ns.close();
    }
    // USAGE_REFRESH_TABLES_PER_MINUTE=3 with the one-minute default share: 3 tables per round and replica.
    assert.equal(a.app.get(UsageRefresher).perRound, 3);
    // What a's writes added goes to the catalog before the rounds (a round flushes its replica's first: done by a
    // while b measures, it would make the tables b measured due again).
    await a.app.get(UsageMeter).flush();
    const [ra, rb] = await Promise.all([a.app.get(UsageRefresher).runOnce(), b.app.get(UsageRefresher).runOnce()]);
    assert.ok(ra.scanned <= 3 && rb.scanned <= 3, JSON.stringify([ra, rb]));
    assert.equal(ra.scanned + rb.scanned, 5, `each table once: ${JSON.stringify([ra, rb])}`);
    // All five measured once; nothing is due again.
    const [ra2, rb2] = await Promise.all([a.app.get(UsageRefresher).runOnce(), b.app.get(UsageRefresher).runOnce()]);
    assert.equal(ra2.scanned + rb2.scanned, 0);
    const day = await operator(a).get(`/admin/v1/databases/${t.name}/usage?from=${today()}`);
    assert.equal(day.body.periods[0].tables, 5);
    assert.ok(day.body.periods[0].storage_bytes > 0);
  });
});

forEachCatalog('storage refresher: what is measured first', (kind) => {
  let gw: TestGateway;
  let tenant: Tenant;

  before(async () => {
    // 5 tables per round: the order of the claim decides which.
    gw = await startGateway(kind, {
      USAGE_FLUSH_INTERVAL_SECONDS: '3600',
      USAGE_REFRESH_INTERVAL_SECONDS: '0',
      USAGE_REFRESH_TABLES_PER_MINUTE: '5',
    });
    tenant = await newTenant(gw);
  });
  after(() => gw?.close());

  it('measures tables written through the gateway first, then tables opened for writing, then never-measured ones', async () => {
    const names = Array.from({ length: 200 }, (_, i) => `d${String(i).padStart(3, '0')}`);
    for (let i = 0; i < names.length; i += 20) {
      await Promise.all(
        names.slice(i, i + 20).map(async (n) => {
          const r = await tenant.api.post(`/v1/table/${n}/declare`, {});
          assert.equal(r.status, 200, r.text);
        }),
      );
    }
    // Three of them written through the gateway (their first data), late in the declaration order; two others opened
    // for writing (a namespace-mode writer's describe); every other declared table is due too (never measured).
    const written = ['d150', 'd170', 'd190'];
    for (const n of written) {
      const r = await fetch(`${gw.url}/v1/table/${n}/create`, {
        method: 'POST',
        headers: { 'x-api-key': tenant.writeKey, 'x-service-database': tenant.name, 'content-type': 'application/vnd.apache.arrow.stream' },
        body: ipcOf(rows(0, 20)),
      });
      assert.equal(r.status, 200, await r.text());
    }
    const opened = ['d160', 'd180'];
    for (const n of opened) assert.equal((await tenant.api.post(`/v1/table/${n}/describe`, {})).status, 200);
    // A read key's describe marks nothing.
    assert.equal((await tenant.reader.post(`/v1/table/d140/describe`, {})).status, 200);

    await gw.app.get(UsageMeter).flush();
    const prisma = gw.app.get(PrismaClient);
    const measured = async () =>
      (
        await prisma.$queryRawUnsafe<{ name: string; bytes: string }[]>(
          `SELECT t.name, u.total_bytes::text AS bytes FROM table_usage u JOIN tables t ON t.id = u.table_id
            WHERE t.database_id = (SELECT id FROM databases WHERE name = $1) AND u.scanned_at IS NOT NULL ORDER BY t.name`,
          tenant.name,
        )
      ).map((r) => ({ name: r.name, bytes: Number(r.bytes) }));

    const round = await gw.app.get(UsageRefresher).runOnce();
    assert.deepEqual([round.scanned, round.failed], [5, 0]);
    const first = await measured();
    assert.deepEqual(
      first.map((m) => m.name),
      [...written, ...opened].sort(),
    );
    for (const m of first) assert.ok(written.includes(m.name) ? m.bytes > 0 : m.bytes === 0, JSON.stringify(m));
    // Then never-measured ones.
    assert.equal((await gw.app.get(UsageRefresher).runOnce()).scanned, 5);
    assert.equal((await measured()).length, 10);
  });

  it('a mark made before the claim within the same millisecond is cleared by the measurement (microsecond claim times)', async () => {
    assert.equal((await tenant.api.post(`/v1/table/same-ms/declare`, {})).status, 200);
    const prisma = gw.app.get(PrismaClient);
    const [{ id }] = await prisma.$queryRawUnsafe<{ id: string }[]>(
      `SELECT t.id FROM tables t JOIN databases d ON d.id = t.database_id WHERE d.name = $1 AND t.name = 'same-ms'`,
      tenant.name,
    );
    const repo = gw.app.get(UsageRepository);
    // Nothing else due: every other table of the catalog measured now.
    await prisma.$executeRawUnsafe(
      `UPDATE table_usage SET marked = NULL, marked_at = NULL, scanned_at = now() WHERE table_id <> $1::uuid`,
      id,
    );
    await prisma.$executeRawUnsafe(
      `INSERT INTO table_usage (table_id, database_id) SELECT id, database_id FROM tables WHERE id = $1::uuid ON CONFLICT DO NOTHING`,
      id,
    );
    const [claimed] = await repo.claimDue('replica-x', 1, 86_400_000, 60_000);
    assert.equal(claimed?.tableId, id);
    // Marked 1 µs before the claim: a millisecond-truncated claim time would read it as made during the measurement.
    await prisma.$executeRawUnsafe(
      `UPDATE table_usage SET marked = ${MARK_WRITTEN}, marked_at = $2::timestamptz - interval '1 microsecond' WHERE table_id = $1::uuid`,
      id,
      claimed.claimedAt,
    );
    await repo.recordScans('replica-x', [{ ...claimed, bytes: 1, currentBytes: 0, rows: 0 }]);
    const [row] = await prisma.$queryRawUnsafe<{ marked: number | null; scanned: boolean }[]>(
      `SELECT marked, scanned_at = $2::timestamptz AS scanned FROM table_usage WHERE table_id = $1::uuid`,
      id,
      claimed.claimedAt,
    );
    assert.deepEqual(row, { marked: null, scanned: true });
    assert.deepEqual(await repo.claimDue('replica-x', 1, 86_400_000, 60_000), [], 'not due again');
  });
});
