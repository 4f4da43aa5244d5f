import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CATALOG_KINDS, startGateway } from './helpers/gateway';
import { useCli } from './helpers/cli';

/** The operator CLI's change-event sinks (docs/events.md), and the fleet's sinks of EVENT_SINKS. */
describe('operator CLI: event sinks [postgres]', { skip: !CATALOG_KINDS.includes('postgres') }, () => {
  const h = useCli('lgw_cli_events');
  const { cli, ok } = h;

  it('creates, lists, updates and deletes sinks; prints a webhook secret once; refuses bad ones', async () => {
    ok(await cli('databases', 'create', 'acme'));
    const fleet = ok(
      await cli('events', 'create', '--name', 'bus', '--kind', 'nats', '--url', 'nats://127.0.0.1:4222', '--types', 'lance.table.*'),
    );
    assert.equal(fleet.database, null);
    assert.deepEqual(fleet.types, ['lance.table.*']);
    assert.equal(fleet.subject_prefix, 'lance');
    const hook = ok(
      await cli(
        'events',
        'create',
        'acme',
        '--name',
        'hook',
        '--kind',
        'webhook',
        '--url',
        'https://93.184.216.34/in',
        '--namespace-prefix',
        'sales,eu',
      ),
    );
    assert.match(hook.secret, /^whsec_/);
    assert.deepEqual(hook.namespace_prefix, ['sales', 'eu']);
    const listed = ok(await cli('events', 'sinks', 'acme'));
    assert.deepEqual(
      listed.sinks.map((s: any) => s.name),
      ['hook'],
    );
    assert.ok(!JSON.stringify(listed).includes(hook.secret), 'no secret in a listing');
    assert.deepEqual(
      ok(await cli('events', 'sinks')).sinks.map((s: any) => s.name),
      ['bus'],
    );
    const rotated = ok(await cli('events', 'update', hook.id, '--rotate-secret', '--enabled', 'false'));
    assert.match(rotated.secret, /^whsec_/);
    assert.notEqual(rotated.secret, hook.secret);
    assert.equal(rotated.state, 'disabled');
    assert.deepEqual(ok(await cli('events', 'dead-letters', hook.id)).dead_letters, []);
    assert.deepEqual(ok(await cli('events', 'replay', hook.id)), { count: 0 });
    // A private target, a bad kind: refused with the API's message, nothing made.
    const refused = await cli('events', 'create', 'acme', '--name', 'local', '--kind', 'webhook', '--url', 'https://127.0.0.1/x');
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /loopback/);
    assert.equal((await cli('events', 'create', '--name', 'k', '--kind', 'kafka', '--url', 'x')).code, 2);
    assert.deepEqual(ok(await cli('events', 'delete', hook.id)), { deleted: hook.id });
    assert.equal((await cli('events', 'get', hook.id)).code, 1);
  });

  it('a gateway brings EVENT_SINKS into the catalog as fleet sinks the API may not change', async () => {
    const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    h.gw = await startGateway('postgres', {
      DATABASE_URL: h.db.url,
      EVENTS_DISPATCH_INTERVAL_MS: '0',
      EVENT_SINKS: JSON.stringify([{ name: 'from-config', kind: 'webhook', url: 'https://93.184.216.34/events', secret }]),
    });
    const listed = ok(await cli('events', 'sinks'));
    const configured = listed.sinks.find((s: any) => s.name === 'from-config');
    assert.equal(configured.managed_by, 'config');
    assert.ok(!JSON.stringify(listed).includes(secret));
    const changed = await cli('events', 'update', configured.id, '--enabled', 'false');
    assert.equal(changed.code, 1);
    assert.match(changed.stderr, /EVENT_SINKS/);
  });
});
