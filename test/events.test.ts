import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as lancedb from '@lancedb/lancedb';
import { AuditContext, AuditService, pendingAudit } from '../src/modules/audit';
import { UnitOfWork } from '../src/platform/db/unit-of-work';
import { OutboxRepository } from '../src/modules/outbox';
import { EventDispatcher } from '../src/modules/events';
import { privateAddressProblem } from '../src/modules/events';
import { AuditRepository } from '../src/modules/audit/audit.repository';
import { Reclaimer } from '../src/modules/reclaim/reclaimer.service';
import { LanceEngine } from '../src/engine/lance/lance-engine';
import {
  ADMIN_KEY,
  Api,
  CATALOG_KINDS,
  createPgDatabase,
  eventually,
  idPath,
  newTenant,
  operator,
  startGateway,
  Tenant,
  TestGateway,
} from './helpers/gateway';
import { DeliveredEvent, jetStreamConsumer, NATS_URL, verifies, webhookReceiver } from './helpers/event-receivers';
import { freePort } from './helpers/redis';
import { program } from './helpers/root';

/**
 * Change events (docs/events.md): a transactional outbox delivered as CloudEvents to NATS JetStream (the machine's
 * server on 127.0.0.1:4222) and to signed webhooks (a receiver on loopback), observed while a workload runs through
 * REST and the official client in both modes. Every change appears exactly as committed, in order per table; a sink
 * that is down loses nothing; a replica SIGKILLed between commit and delivery loses nothing; a rolled-back change
 * emits nothing; a database's sink sees only its database; the SSRF guard refuses private targets.
 */

const NATS_SERVER = '/usr/sbin/nats-server';

const FAST = {
  EVENTS_DISPATCH_INTERVAL_MS: '100',
  EVENTS_RETRY_BASE_MS: '50',
  EVENTS_RETRY_MAX_MS: '300',
  EVENTS_ALLOW_PRIVATE_TARGETS: 'true',
  MAINTENANCE_ENABLED: 'false',
};

const rows = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ id: from + i, vector: [from + i, 1] }));

/** Events grouped by subject, in the order given. */
function bySubject(events: DeliveredEvent[]): Map<string, DeliveredEvent[]> {
  const m = new Map<string, DeliveredEvent[]>();
  for (const e of events) m.set(e.subject, [...(m.get(e.subject) ?? []), e]);
  return m;
}

/** First delivery of each id, in delivery order (duplicates carry the same id: a consumer keeps the first). */
const dedupe = (events: DeliveredEvent[]) => [...new Map(events.map((e) => [e.id, e] as const)).values()];

function assertCloudEvent(e: DeliveredEvent, database: string): void {
  assert.equal(e.specversion, '1.0');
  assert.match(e.id, /^[0-9a-f-]{36}$/);
  assert.equal(e.source, `/databases/${database}`);
  assert.match(e.type, /^lance\.[a-z_]+\.[a-z_]+$/);
  assert.ok(e.subject === database || e.subject.startsWith(`${database}/`), e.subject);
  assert.ok(!Number.isNaN(Date.parse(e.time)));
  assert.equal(e.datacontenttype, 'application/json');
  assert.match(e.sequence, /^\d{20}$/);
  assert.equal(e.data.database, database);
}

describe('change events: outbox → JetStream and signed webhooks [postgres]', { skip: !CATALOG_KINDS.includes('postgres') }, () => {
  let gw: TestGateway;
  let op: Api;
  let acme: Tenant;
  let other: Tenant;
  let hookA: Awaited<ReturnType<typeof webhookReceiver>>;
  let hookB: Awaited<ReturnType<typeof webhookReceiver>>;
  let js: Awaited<ReturnType<typeof jetStreamConsumer>>;
  let secretA: string;
  let secretB: string;
  const prefix = `lgwtest${randomBytes(4).toString('hex')}`;

  before(async () => {
    gw = await startGateway('postgres', {
      ...FAST,
      EVENTS_MAX_ATTEMPTS: '1000',
      RECLAIM_AFTER_SECONDS: '1',
      RECLAIM_INTERVAL_SECONDS: '0',
    });
    op = operator(gw);
    acme = await newTenant(gw);
    other = await newTenant(gw);
    hookA = await webhookReceiver();
    hookB = await webhookReceiver();
    js = await jetStreamConsumer(prefix);
    const fleet = await op.post('/admin/v1/event-sinks', { name: 'fleet-nats', kind: 'nats', url: NATS_URL, subject_prefix: prefix });
    assert.equal(fleet.status, 201, fleet.text);
    assert.equal(fleet.body.secret, undefined);
    const a = await op.post(`/admin/v1/databases/${acme.name}/event-sinks`, { name: 'hook', kind: 'webhook', url: hookA.url });
    assert.equal(a.status, 201, a.text);
    secretA = a.body.secret;
    assert.match(secretA, /^whsec_/);
    const b = await op.post(`/admin/v1/databases/${other.name}/event-sinks`, { name: 'hook', kind: 'webhook', url: hookB.url });
    assert.equal(b.status, 201, b.text);
    secretB = b.body.secret;
  });

  after(async () => {
    await hookA?.close();
    await hookB?.close();
    await js?.close();
    await gw?.close();
  });

  it('delivers every change of a REST and official-client workload, as committed, in order per table, signed', async () => {
    // REST: a namespace and a declared table.
    assert.equal((await acme.api.post(`/v1/namespace/${idPath('sales')}/create`, {})).status, 200);
    // Remote mode: create, append, delete, update: every write goes through the gateway.
    const remote = await lancedb.connect(`db://${acme.name}`, { apiKey: acme.writeKey, hostOverride: gw.url });
    const t = await remote.createTable('items', rows(0, 5));
    await t.add(rows(5, 3));
    await t.delete('id < 2');
    await t.update({ where: 'id = 7', values: { id: 70 } });
    const finalVersion = await t.version();
    remote.close();
    // Namespace mode: a namespace and a table (its data goes straight to storage; the catalog change is the event).
    const ns = await lancedb.connectNamespace('rest', {
      uri: gw.url,
      headers: { 'x-api-key': acme.writeKey, 'x-service-database': acme.name },
    });
    await ns.createNamespace(['eu']);
    await ns.createTable('orders', rows(0, 4), ['eu']);
    ns.close();
    // The other tenant changes something too.
    assert.equal((await other.api.post(`/v1/namespace/${idPath('theirs')}/create`, {})).status, 200);

    const expected = [
      ['lance.namespace.created', `${acme.name}/sales`],
      ['lance.table.created', `${acme.name}/items`],
      ['lance.table.written', `${acme.name}/items`],
      ['lance.table.written', `${acme.name}/items`],
      ['lance.table.written', `${acme.name}/items`],
      ['lance.namespace.created', `${acme.name}/eu`],
    ];
    const got = await eventually(
      async () => {
        const events = dedupe(hookA.received.map((d) => d.event));
        const orders = events.some((e) => e.subject === `${acme.name}/eu$orders`);
        return events.length >= expected.length + 1 && orders ? events : undefined;
      },
      200,
      50,
    );
    // Tenant isolation: acme's sink has only acme's events, the other's only its own.
    for (const e of got) assertCloudEvent(e, acme.name);
    const theirs = await eventually(async () => (hookB.received.length > 0 ? hookB.received : undefined), 200, 50);
    assert.deepEqual(
      theirs.map((d) => [d.event.type, d.event.subject]),
      [['lance.namespace.created', `${other.name}/theirs`]],
    );
    // Every delivery is signed with its sink's secret (verified by the standardwebhooks package), not another's.
    for (const d of hookA.received) assert.ok(verifies(secretA, d), 'signature verifies');
    assert.ok(!verifies(secretB, hookA.received[0]), "another sink's secret does not verify");
    for (const d of hookB.received) assert.ok(verifies(secretB, d));

    assert.deepEqual(
      got.filter((e) => !e.subject.endsWith('$orders')).map((e) => [e.type, e.subject]),
      expected,
    );
    // Exactly as committed: the writes' operations, counts and versions, in version order.
    const writes = got.filter((e) => e.type === 'lance.table.written');
    assert.deepEqual(
      writes.map((e) => [e.data.operation, e.data.rows_added, e.data.rows_deleted, e.data.rows_updated]),
      [
        ['insert', 3, 0, 0],
        ['delete', 0, 2, 0],
        ['update', 0, 0, 1],
      ],
    );
    const versions = writes.map((e) => e.data.version as number);
    assert.deepEqual(
      versions,
      [...versions].sort((x, y) => x - y),
    );
    assert.equal(versions.at(-1), finalVersion);
    assert.deepEqual(got.find((e) => e.type === 'lance.table.written')!.data.table, ['items']);
    // Never row data: the delete's predicate and the update's values stay in the audit trail.
    const text = JSON.stringify(got);
    assert.ok(!text.includes('id < 2') && !text.includes('predicate') && !text.includes('"values"'), text);
    // Per-table order holds across the stream: sequence numbers rise within every subject.
    for (const list of bySubject(got).values()) {
      const seqs = list.map((e) => e.sequence);
      assert.deepEqual(seqs, [...seqs].sort());
    }

    // JetStream (the fleet sink): the same events, with the same ids, on <prefix>.<database>.<object> subjects.
    const streamed = await eventually(
      async () => {
        const m = await js.read();
        return m.length >= got.length + theirs.length ? m : undefined;
      },
      200,
      50,
    );
    const acmeStreamed = dedupe(streamed.filter((m) => m.event.data.database === acme.name).map((m) => m.event));
    assert.deepEqual(
      acmeStreamed.map((e) => e.id),
      got.map((e) => e.id),
    );
    const items = streamed.find((m) => m.event.subject === `${acme.name}/items`)!;
    assert.equal(items.subject, `${prefix}.${acme.name}.items`);
    assert.ok(streamed.some((m) => m.subject === `${prefix}.${other.name}.theirs`));

    // The operator API shows the subscription's state.
    const sinks = await op.get(`/admin/v1/databases/${acme.name}/event-sinks`);
    assert.equal(sinks.status, 200);
    assert.equal(sinks.body.sinks.length, 1);
    const [s] = sinks.body.sinks;
    assert.equal(s.state, 'active');
    assert.ok(s.delivered >= got.length);
    assert.equal(s.secret, undefined, 'no secret in a listing');
    assert.ok(!JSON.stringify(sinks.body).includes(secretA));
    // Metrics: delivered and lag per sink, the outbox's depth; a database sink is labelled by id, not tenant name.
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    assert.match(metrics, new RegExp(`lgw_events_delivered_total\\{sink="${s.id}"\\} \\d+`));
    assert.match(metrics, /lgw_events_delivered_total\{sink="fleet-nats"\} \d+/);
    assert.ok(!metrics.includes(`sink="${acme.name}`));
  });

  it('a change that rolls back emits nothing', async () => {
    const uow = gw.app.get(UnitOfWork);
    const audit = gw.app.get(AuditService);
    const before = hookA.received.length;
    const pending = pendingAudit({ databaseName: acme.name, databaseId: null, actor: 'test', action: 'namespace.create', target: 'ghost' });
    await assert.rejects(
      uow.run(() =>
        AuditContext.run(pending, async () => {
          await audit.recordWithChange();
          throw new Error('the change failed after its record was written');
        }),
      ),
      /the change failed/,
    );
    // A committed change after it is delivered; the rolled-back one never is.
    assert.equal((await acme.api.post(`/v1/namespace/${idPath('after_rollback')}/create`, {})).status, 200);
    await eventually(async () => hookA.received.some((d) => d.event.subject === `${acme.name}/after_rollback`), 200, 50);
    assert.ok(!hookA.received.slice(before).some((d) => d.event.subject.endsWith('/ghost')));
  });

  /** Adds `data` while the catalog refuses the commit's confirmation: the engine commits, the record stays pending. */
  const addUnconfirmed = async (t: lancedb.Table, data: Record<string, unknown>[]) => {
    const repo = gw.app.get(AuditRepository) as unknown as { confirm: (...a: unknown[]) => Promise<void> };
    const confirm = repo.confirm;
    repo.confirm = () => Promise.reject(new Error('catalog database unavailable (injected)'));
    try {
      await t.add(data);
    } finally {
      repo.confirm = confirm;
    }
  };

  it('an engine commit whose bookkeeping was cut off gets its event from the reclaimer (recovered, same version)', async () => {
    const remote = await lancedb.connect(`db://${acme.name}`, { apiKey: acme.writeKey, hostOverride: gw.url });
    const t = await remote.openTable('items');
    // The catalog goes away right after the engine's commit: the audit record stays pending, no event is written.
    await addUnconfirmed(t, rows(100, 2));
    const version = await t.version();
    remote.close();
    await new Promise((r) => setTimeout(r, 500));
    const isIt = (e: DeliveredEvent) => e.type === 'lance.table.written' && e.data.version === version;
    assert.ok(!hookA.received.some((d) => isIt(d.event)), 'no event before the reclaimer ran');
    // Once the commit is older than RECLAIM_AFTER_SECONDS, a reclaimer round completes it.
    const round = await eventually(
      async () => {
        const r = await gw.app.get(Reclaimer).runOnce();
        return r.commitsCompleted > 0 ? r : undefined;
      },
      60,
      100,
    ).catch(async (err: Error) => {
      // What the reclaimer saw, for a run where it never completed the commit (the trail of items, its versions).
      const trail = await gw.app
        .get(UnitOfWork)
        .read(`SELECT created_at, action, target, details FROM audit_events WHERE target LIKE '%items' ORDER BY created_at`, []);
      const [row] = await gw.app
        .get(UnitOfWork)
        .read<{ location: string }>(
          `SELECT t.location FROM tables t JOIN databases d ON d.id = t.database_id WHERE t.name = 'items' AND d.name = $1`,
          [acme.name],
        );
      const versions = row ? await gw.app.get(LanceEngine).versions(row.location) : [];
      throw new Error(`${err.message}: version ${version}; trail ${JSON.stringify(trail)}; versions ${JSON.stringify(versions)}`);
    });
    assert.equal(round.commitsCompleted, 1);
    const recovered = await eventually(async () => hookA.received.find((d) => isIt(d.event)), 200, 50);
    assert.equal(recovered.event.data.recovered, true);
    assert.equal(recovered.event.data.operation, 'insert');
    assert.equal(recovered.event.data.rows_added, undefined, 'no invented counts');
    assert.equal((await gw.app.get(Reclaimer).runOnce()).commitsCompleted, 0, 'completed once');
    const trail = await operator(gw).get(`/admin/v1/databases/${acme.name}/audit?action=table.insert`);
    assert.ok(trail.body.events.some((e: any) => e.details.version === version && e.details.outcome === 'committed'));
  });

  it("a dead writer's commit is told apart from another writer's whose record was written long before its commit", async () => {
    const remote = await lancedb.connect(`db://${acme.name}`, { apiKey: acme.writeKey, hostOverride: gw.url });
    const t = await remote.createTable('slow', rows(0, 2));
    await t.add(rows(2, 2)); // confirmed, as a long upload is: its record says its version
    const earlier = await t.version();
    // That upload recorded itself 5 s before its commit (and the table is older than that).
    const db = gw.app.get(UnitOfWork).db;
    await db.$executeRawUnsafe(`UPDATE tables SET created_at = created_at - interval '1 minute' WHERE name = 'slow'`);
    await db.$executeRawUnsafe(
      `UPDATE audit_events SET created_at = created_at - interval '5 seconds' WHERE target = 'slow' AND details->>'version' = $1`,
      String(earlier),
    );
    await addUnconfirmed(t, rows(4, 2));
    const version = await t.version();
    remote.close();
    await eventually(async () => (await gw.app.get(Reclaimer).runOnce()).commitsCompleted > 0, 60, 100);
    const [settled] = await gw.app
      .get(UnitOfWork)
      .read<{ details: { version: number; recovered?: boolean } }>(
        `SELECT details FROM audit_events WHERE target = 'slow' AND details->>'recovered' = 'true'`,
        [],
      );
    assert.equal(settled.details.version, version, `completed at its own version, not the earlier writer's (${earlier})`);
  });

  it("numbers a table's writes in version order even when their events were written the other way round", async () => {
    const uow = gw.app.get(UnitOfWork);
    const outbox = gw.app.get(OutboxRepository);
    const ev = (subject: string, version: number | undefined, type = 'lance.table.written') => ({
      databaseId: null,
      databaseName: 'race',
      type,
      subject,
      objectId: [subject.split('/')[1]],
      data: { database: 'race', ...(version === undefined ? {} : { version }) },
    });
    // One transaction: the dispatcher numbers all five in one batch (as two racing writers' events usually are).
    await uow.run(async () => {
      await outbox.insert(ev('race/t', 6));
      await outbox.insert(ev('race/u', 1));
      await outbox.insert(ev('race/t', undefined, 'lance.table.renamed'));
      await outbox.insert(ev('race/t', 3, 'lance.table.tag_created')); // names a version, makes none: keeps its place
      await outbox.insert(ev('race/t', 5));
    });
    await outbox.sequence(1000);
    const numbered = await uow.read<{ type: string; subject: string; v: number | null }>(
      `SELECT type, subject, (data->>'version')::int AS v FROM outbox_events WHERE database_name = 'race' ORDER BY seq`,
      [],
    );
    assert.deepEqual(
      numbered.map((r) => [r.subject, r.type.slice('lance.table.'.length), r.v]),
      [
        ['race/t', 'written', 5],
        ['race/u', 'written', 1],
        ['race/t', 'renamed', null],
        ['race/t', 'tag_created', 3],
        ['race/t', 'written', 6],
      ],
    );
  });

  it('a sink that is down loses nothing: deliveries resume, in order, when it is back (duplicates keep their id)', async () => {
    hookA.status = 503;
    await js.deleteStream(); // JetStream down for this prefix: publishes are not acknowledged
    const names = Array.from({ length: 6 }, (_, i) => `while_down_${i}`);
    for (const n of names) assert.equal((await acme.api.post(`/v1/namespace/${idPath(n)}/create`, {})).status, 200);
    await eventually(
      async () => {
        const s = (await op.get(`/admin/v1/databases/${acme.name}/event-sinks`)).body.sinks[0];
        return s.state === 'retrying' && s.failed > 0 && s.last_error?.includes('503');
      },
      200,
      50,
    );
    hookA.status = 200;
    await js.createStream();
    const seen = await eventually(
      async () => {
        const subjects = dedupe(hookA.received.map((d) => d.event)).map((e) => e.subject);
        return names.every((n) => subjects.includes(`${acme.name}/${n}`)) ? subjects : undefined;
      },
      300,
      50,
    );
    assert.deepEqual(
      seen.filter((x) => x.includes('/while_down_')),
      names.map((n) => `${acme.name}/${n}`),
    );
    const streamed = await eventually(
      async () => {
        const m = (await js.read()).map((x) => x.event.subject).filter((x) => x.includes('/while_down_'));
        return m.length >= names.length ? m : undefined;
      },
      200,
      50,
    );
    assert.deepEqual(
      [...new Set(streamed)],
      names.map((n) => `${acme.name}/${n}`),
    );
  });
});

describe('change events: dead letters, replay and discard; the SSRF guard [embedded]', () => {
  let gw: TestGateway;
  let guarded: TestGateway;
  let hook: Awaited<ReturnType<typeof webhookReceiver>>;

  before(async () => {
    gw = await startGateway(CATALOG_KINDS.includes('embedded') ? 'embedded' : 'postgres', {
      ...FAST,
      EVENTS_MAX_ATTEMPTS: '2',
      EVENTS_RETENTION_SECONDS: '0',
    });
    guarded = await startGateway(CATALOG_KINDS.includes('embedded') ? 'embedded' : 'postgres', { EVENTS_DISPATCH_INTERVAL_MS: '0' });
    hook = await webhookReceiver();
  });
  after(async () => {
    await hook?.close();
    await gw?.close();
    await guarded?.close();
  });

  it('dead-letters an event after EVENTS_MAX_ATTEMPTS, lists it, replays it once the target is back, discards', async () => {
    const op = operator(gw);
    const t = await newTenant(gw);
    const sink = await op.post(`/admin/v1/databases/${t.name}/event-sinks`, {
      name: 'flaky',
      kind: 'webhook',
      url: hook.url,
      types: ['lance.namespace.*'],
    });
    assert.equal(sink.status, 201, sink.text);
    hook.status = 500;
    assert.equal((await t.api.post(`/v1/namespace/${idPath('lost')}/create`, {})).status, 200);
    const dead = await eventually(
      async () => {
        const r = await op.get(`/admin/v1/event-sinks/${sink.body.id}/dead-letters`);
        return r.body.dead_letters?.length === 1 ? r.body.dead_letters : undefined;
      },
      200,
      50,
    );
    assert.equal(dead[0].event.subject, `${t.name}/lost`);
    assert.equal(dead[0].attempts, 2);
    assert.match(dead[0].last_error, /500/);
    // Later events are not held up by a dead letter.
    hook.status = 200;
    assert.equal((await t.api.post(`/v1/namespace/${idPath('next')}/create`, {})).status, 200);
    await eventually(async () => hook.received.some((d) => d.event.subject === `${t.name}/next`), 200, 50);
    assert.ok(!hook.received.some((d) => d.event.subject === `${t.name}/lost`));
    // The filter: a table event is not for this sink.
    const replay = await op.post(`/admin/v1/event-sinks/${sink.body.id}/dead-letters/replay`, {});
    assert.deepEqual(replay.body, { count: 1 });
    const replayed = await eventually(async () => hook.received.find((d) => d.event.subject === `${t.name}/lost`), 200, 50);
    assert.equal(replayed.event.id, dead[0].event_id);
    assert.ok(verifies(sink.body.secret, replayed));
    assert.equal((await op.get(`/admin/v1/event-sinks/${sink.body.id}/dead-letters`)).body.dead_letters.length, 0);
    // Another dead letter, discarded.
    hook.status = 500;
    assert.equal((await t.api.post(`/v1/namespace/${idPath('dropped_on_floor')}/create`, {})).status, 200);
    await eventually(
      async () => (await op.get(`/admin/v1/event-sinks/${sink.body.id}/dead-letters`)).body.dead_letters.length === 1,
      200,
      50,
    );
    hook.status = 200;
    assert.deepEqual((await op.post(`/admin/v1/event-sinks/${sink.body.id}/dead-letters/discard`, {})).body, { count: 1 });
    assert.equal((await op.get(`/admin/v1/event-sinks/${sink.body.id}/dead-letters`)).body.dead_letters.length, 0);
    const state = (await op.get(`/admin/v1/event-sinks/${sink.body.id}`)).body;
    assert.equal(state.dead_letters, 0);
    assert.ok(state.failed >= 4);
  });

  it('filters by type and namespace prefix, and trims what every sink has once its retention passed', async () => {
    const op = operator(gw);
    const t = await newTenant(gw);
    const filtered = await webhookReceiver();
    try {
      const sink = await op.post(`/admin/v1/databases/${t.name}/event-sinks`, {
        name: 'eu-tables',
        kind: 'webhook',
        url: filtered.url,
        types: ['lance.table.*'],
        namespace_prefix: ['eu'],
      });
      assert.equal(sink.status, 201, sink.text);
      for (const n of ['eu', 'us']) assert.equal((await t.api.post(`/v1/namespace/${idPath(n)}/create`, {})).status, 200);
      assert.equal((await t.api.post(`/v1/namespace/${idPath('eu', 'sub')}/create`, {})).status, 200);
      for (const id of [
        ['eu', 'a'],
        ['us', 'b'],
        ['eu', 'sub', 'c'],
      ]) {
        assert.equal((await t.api.post(`/v1/table/${idPath(...id)}/declare`, {})).status, 200);
      }
      assert.equal((await t.api.post(`/v1/namespace/${idPath('last')}/create`, {})).status, 200);
      // Wait for the sink to pass the last change (a namespace event it does not take), then look at what it took.
      await eventually(
        async () => {
          const s = (await op.get(`/admin/v1/event-sinks/${sink.body.id}`)).body;
          const last = await gw.app.get(OutboxRepository).head();
          return BigInt(s.cursor) >= last && s.delivered === 2;
        },
        200,
        50,
      );
      assert.deepEqual(
        filtered.received.map((d) => [d.event.type, d.event.subject]),
        [
          ['lance.table.declared', `${t.name}/eu$a`],
          ['lance.table.declared', `${t.name}/eu$sub$c`],
        ],
      );
    } finally {
      await filtered.close();
    }
    // Every enabled sink has what was committed so far; with EVENTS_RETENTION_SECONDS=0 the trim removes it all.
    await eventually(async () => {
      const sinks = [...(await op.get('/admin/v1/event-sinks')).body.sinks];
      return sinks.every((s: any) => s.state === 'active');
    });
    await gw.app.get(EventDispatcher).housekeeping();
    const uow = gw.app.get(UnitOfWork);
    const head = await gw.app.get(OutboxRepository).head();
    const [left] = await uow.read<{ n: number }>(`SELECT count(*)::int AS n FROM outbox_events WHERE seq <= $1::bigint`, [head.toString()]);
    assert.ok(left.n < Number(head), `trimmed: ${left.n} of ${head} left`);
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    assert.match(metrics, /lgw_events_outbox_depth \d+/);
  });

  it('serves more sinks than one round leases (40 webhooks on one database, 32 per round) and skips idle ones', async () => {
    const op = operator(gw);
    const t = await newTenant(gw);
    const quiet = await newTenant(gw);
    const many = await webhookReceiver();
    try {
      const ids: string[] = [];
      for (let i = 0; i < 40; i++) {
        const r = await op.post(`/admin/v1/databases/${t.name}/event-sinks`, {
          name: `s${i}`,
          kind: 'webhook',
          url: `${many.url}?sink=${i}`,
        });
        assert.equal(r.status, 201, r.text);
        ids.push(r.body.id);
      }
      const idle = await op.post(`/admin/v1/databases/${quiet.name}/event-sinks`, { name: 'idle', kind: 'webhook', url: many.url });
      assert.equal((await t.api.post(`/v1/namespace/${idPath('fan_out')}/create`, {})).status, 200);
      await eventually(async () => many.received.filter((d) => d.event.subject === `${t.name}/fan_out`).length >= 40, 300, 50);
      assert.equal(new Set(many.received.map((d) => d.event.id)).size, 1, 'one event, forty deliveries');
      // The quiet database's sink moved past the event without being sent anything.
      const head = await gw.app.get(OutboxRepository).head();
      await eventually(async () => BigInt((await op.get(`/admin/v1/event-sinks/${idle.body.id}`)).body.cursor) >= head, 100, 50);
      assert.equal((await op.get(`/admin/v1/event-sinks/${idle.body.id}`)).body.delivered, 0);
      for (const id of ids) assert.equal((await op.request('DELETE', `/admin/v1/event-sinks/${id}`)).status, 204);
    } finally {
      await many.close();
    }
  });

  it(
    'publishes to a NATS server that wants a user and password (from the sink URL), shown redacted',
    { skip: !fs.existsSync(NATS_SERVER) },
    async () => {
      const port = await freePort();
      const store = fs.mkdtempSync(path.join(os.tmpdir(), 'lgw-nats-'));
      const server = spawn(
        NATS_SERVER,
        ['-a', '127.0.0.1', '-p', String(port), '--user', 'gw', '--pass', 's3cr3t-pw', '-js', '-sd', store],
        { stdio: 'ignore' },
      );
      try {
        const url = `nats://gw:s3cr3t-pw@127.0.0.1:${port}`;
        const js = await eventually(
          async () => jetStreamConsumer('authed', { servers: [`127.0.0.1:${port}`], user: 'gw', pass: 's3cr3t-pw' }).catch(() => undefined),
          100,
          100,
        );
        try {
          const op = operator(gw);
          const t = await newTenant(gw);
          const sink = await op.post(`/admin/v1/databases/${t.name}/event-sinks`, {
            name: 'authed',
            kind: 'nats',
            url,
            subject_prefix: 'authed',
          });
          assert.equal(sink.status, 201, sink.text);
          assert.equal(sink.body.url, `nats://***@127.0.0.1:${port}`);
          assert.ok(!JSON.stringify((await op.get(`/admin/v1/databases/${t.name}/event-sinks`)).body).includes('s3cr3t-pw'));
          assert.equal((await t.api.post(`/v1/namespace/${idPath('authed_ns')}/create`, {})).status, 200);
          const got = await eventually(
            async () => {
              const m = await js.read();
              return m.length > 0 ? m : undefined;
            },
            200,
            50,
          );
          assert.equal(got[0].subject, `authed.${t.name}.authed_ns`);
        } finally {
          await js.close();
        }
      } finally {
        server.kill('SIGKILL');
        fs.rmSync(store, { recursive: true, force: true });
      }
    },
  );

  it('refuses webhook targets on loopback, link-local and private addresses unless allowed; bad sinks are 400', async () => {
    const op = operator(guarded);
    const t = await newTenant(guarded);
    for (const url of [
      'https://127.0.0.1/hook',
      'https://localhost:8443/hook',
      'https://10.1.2.3/hook',
      'https://192.168.0.7/hook',
      'https://169.254.169.254/latest/meta-data',
      'https://[::1]/hook',
      'https://[fd00::1]/hook',
      'https://[::ffff:127.0.0.1]/hook',
      'http://93.184.216.34/hook',
      'https://user:pw@93.184.216.34/hook',
    ]) {
      const r = await op.post(`/admin/v1/databases/${t.name}/event-sinks`, { name: 'x', kind: 'webhook', url });
      assert.equal(r.status, 400, `${url}: ${r.text}`);
      assert.equal(r.body.error?.code ?? r.body.code, 13);
    }
    const ok = await op.post(`/admin/v1/databases/${t.name}/event-sinks`, {
      name: 'public',
      kind: 'webhook',
      url: 'https://93.184.216.34/hook',
    });
    assert.equal(ok.status, 201, ok.text);
    // Changing it to a private target is refused too.
    const moved = await op.request('PATCH', `/admin/v1/event-sinks/${ok.body.id}`, { url: 'https://127.0.0.1/x' });
    assert.equal(moved.status, 400);
    assert.equal(
      (await op.post(`/admin/v1/databases/${t.name}/event-sinks`, { name: 'public', kind: 'webhook', url: 'https://93.184.216.34/h' }))
        .status,
      409,
    );
    for (const bad of [
      { name: 'n', kind: 'kafka', url: 'x' },
      { name: 'n', kind: 'nats', url: 'https://x' },
      { name: 'n', kind: 'nats', url: NATS_URL, subject_prefix: 'a.*' },
      { name: 'bad name!', kind: 'nats', url: NATS_URL },
      { name: 'n', kind: 'nats', url: NATS_URL, types: ['Not A Type'] },
    ]) {
      assert.equal((await op.post('/admin/v1/event-sinks', bad)).status, 400, JSON.stringify(bad));
    }
    assert.equal((await op.post('/admin/v1/databases/nope/event-sinks', { name: 'n', kind: 'nats', url: NATS_URL })).status, 404);
    // Tenants cannot manage sinks.
    assert.equal((await t.api.post(`/admin/v1/databases/${t.name}/event-sinks`, { name: 'n', kind: 'nats', url: NATS_URL })).status, 403);
    // At delivery, every resolved address is checked again (a name that resolves to loopback is refused).
    assert.match(privateAddressProblem('127.0.0.1') ?? '', /loopback/);
    assert.match(privateAddressProblem('::ffff:10.0.0.1') ?? '', /private/);
    assert.equal(privateAddressProblem('93.184.216.34'), null);
  });
});

describe(
  'change events: a replica SIGKILLed between commit and delivery loses nothing [postgres]',
  { skip: !CATALOG_KINDS.includes('postgres') },
  () => {
    const MAIN = program(path.resolve(__dirname, '../src/main.js'));
    let pg: Awaited<ReturnType<typeof createPgDatabase>>;
    let dataDir: string;
    let hook: Awaited<ReturnType<typeof webhookReceiver>>;
    const children: Array<ReturnType<typeof spawn>> = [];

    async function replica(env: Record<string, string>): Promise<string> {
      const port = await freePort();
      const child = spawn(process.execPath, [MAIN], {
        env: {
          ...process.env,
          ...FAST,
          PORT: String(port),
          DATABASE_URL: pg.url,
          DATA_DIR: dataDir,
          ADMIN_API_KEY: ADMIN_KEY,
          BOOTSTRAP_DATABASE: '',
          EVENTS_LEASE_SECONDS: '2',
          EVENTS_MAX_ATTEMPTS: '1000',
          NODE_NO_WARNINGS: '1',
          ...env,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.push(child);
      let out = '';
      child.stdout!.on('data', (d) => (out += d));
      child.stderr!.on('data', (d) => (out += d));
      await eventually(async () => out.includes('listening on') || child.exitCode !== null, 600, 100);
      assert.equal(child.exitCode, null, out);
      return `http://127.0.0.1:${port}`;
    }

    before(async () => {
      pg = await createPgDatabase('lgw_events_kill');
      dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'lgw-events-'));
      hook = await webhookReceiver();
    });
    after(async () => {
      for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
      await hook?.close();
      await pg?.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    });

    it('the next replica delivers what the killed one had committed, with the same ids', async () => {
      const first = await replica({});
      const t = await newTenant({ url: first });
      const sink = await operator({ url: first }).post(`/admin/v1/databases/${t.name}/event-sinks`, {
        name: 'hook',
        kind: 'webhook',
        url: hook.url,
      });
      assert.equal(sink.status, 201, sink.text);
      // The receiver holds the first delivery unanswered: the first replica is mid-delivery when it dies.
      let held: DeliveredEvent | undefined;
      hook.hold = (e) => {
        if (held && held.id !== e.id) return false;
        held = e;
        return true;
      };
      const names = ['k0', 'k1', 'k2', 'k3'];
      for (const n of names) assert.equal((await t.api.post(`/v1/namespace/${idPath(n)}/create`, {})).status, 200);
      await eventually(async () => held !== undefined, 200, 50);
      children[0].kill('SIGKILL');
      await new Promise((r) => children[0].once('exit', r));
      hook.hold = () => false;
      await replica({});
      const got = await eventually(
        async () => {
          const subjects = dedupe(hook.received.map((d) => d.event)).map((e) => e.subject);
          return names.every((n) => subjects.includes(`${t.name}/${n}`)) ? hook.received : undefined;
        },
        300,
        50,
      );
      assert.deepEqual(
        dedupe(got.map((d) => d.event)).map((e) => e.subject),
        names.map((n) => `${t.name}/${n}`),
      );
      assert.equal(got.find((d) => d.event.subject === held!.subject)!.event.id, held!.id, 'the redelivery keeps its id');
      for (const d of got) assert.ok(verifies(sink.body.secret, d));
    });
  },
);
