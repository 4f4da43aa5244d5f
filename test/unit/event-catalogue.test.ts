import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { EVENT_TYPES, eventOf, NOT_EVENTS } from '../../src/modules/outbox';
import { natsSubject, subjectToken } from '../../src/modules/events';

/** Every audited action, as the source declares it (@Audited('…') and the actions written by hand). */
function auditedActions(): Set<string> {
  const root = path.resolve(__dirname, '../../../src');
  const found = new Set<string>();
  const walk = (dir: string) => {
    for (const f of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, f.name);
      if (f.isDirectory()) walk(p);
      else if (p.endsWith('.ts')) {
        const text = fs.readFileSync(p, 'utf8');
        for (const m of text.matchAll(/@Audited\('([a-z_.]+)'/g)) found.add(m[1]);
        for (const m of text.matchAll(/action: '([a-z_]+\.[a-z_]+)'/g)) found.add(m[1]);
      }
    }
  };
  walk(fs.existsSync(root) ? root : path.resolve(__dirname, '../../src'));
  return found;
}

describe('the event catalogue', () => {
  it('places every audited action: an event type, or deliberately none', () => {
    const actions = auditedActions();
    assert.ok(actions.size > 30, `found ${actions.size} actions`);
    const unplaced = [...actions].filter((a) => !(a in EVENT_TYPES) && !NOT_EVENTS.includes(a));
    assert.deepEqual(unplaced, []);
  });

  it('keeps ids, versions and counts, never predicates, locations or properties', () => {
    const e = eventOf({
      databaseId: 'd',
      databaseName: 'acme',
      actor: 'key:1',
      action: 'table.delete',
      target: 'sales$eu$orders',
      details: { predicate: "name = 'secret row'", version: 7, num_deleted_rows: 3, location: '/data/x', outcome: 'committed' },
      requestId: 'r1',
    })!;
    assert.equal(e.type, 'lance.table.written');
    assert.equal(e.subject, 'acme/sales$eu$orders');
    assert.deepEqual(e.objectId, ['sales', 'eu', 'orders']);
    assert.deepEqual(e.data, {
      database: 'acme',
      table: ['sales', 'eu', 'orders'],
      operation: 'delete',
      version: 7,
      rows_added: 0,
      rows_updated: 0,
      rows_deleted: 3,
      actor: 'key:1',
      request_id: 'r1',
    });
    // A record not confirmed yet (before an engine commit) is no event; nor is an action outside the catalogue.
    assert.equal(
      eventOf({ databaseId: 'd', databaseName: 'a', actor: 'x', action: 'table.insert', target: 't', details: { outcome: 'pending' } }),
      null,
    );
    assert.equal(eventOf({ databaseId: 'd', databaseName: 'a', actor: 'x', action: 'request.refused', target: 't', details: {} }), null);
    const db = eventOf({
      databaseId: 'd',
      databaseName: 'a',
      actor: 'operator',
      action: 'database.update',
      target: 'a',
      details: { network_rules: {} },
    })!;
    assert.equal(db.subject, 'a');
    assert.deepEqual(db.objectId, []);
    assert.equal('network_rules' in db.data, false);
  });

  it('makes NATS subjects that a name cannot split or wildcard', () => {
    assert.equal(subjectToken('a.b*c>d e'), 'a%2Eb%2Ac%3Ed%20e');
    assert.equal(subjectToken('sales$orders'), 'sales$orders');
    const ev = (subject: string) => ({ subject, data: { database: 'acme.prod' } }) as never;
    assert.equal(natsSubject('lance', ev('acme.prod/sales$orders')), 'lance.acme%2Eprod.sales$orders');
    assert.equal(natsSubject('lance', ev('acme.prod')), 'lance.acme%2Eprod');
  });
});
