import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/platform/config/config';
import { addressInCidrs, cidrProblem, ClientAddressResolver, forwardedFor, normalizeCidr } from '../../src/platform/network/client-address';

/** The client address behind trusted proxies, and CIDR matching, of the network rules (docs/access-control.md). */
describe('client address and CIDRs', () => {
  test('accepts the usual notations only, and normalizes them', () => {
    for (const ok of ['10.0.0.0/8', '192.0.2.7', '0.0.0.0/0', '2001:db8::/32', '::1', '::/0', '::ffff:10.0.0.0/104']) {
      assert.equal(cidrProblem(ok), null, ok);
    }
    for (const bad of ['10.0.0', '10.0.0.0/33', '::1/129', '0x0a.0.0.1', '10.0.0.0/8/8', 'any', '', ' ', '10.0.0.0/-1', 'fe80::1%eth0']) {
      assert.notEqual(cidrProblem(bad), null, bad);
    }
    assert.equal(normalizeCidr('10.1.2.3/8'), '10.0.0.0/8');
    assert.equal(normalizeCidr('192.0.2.7'), '192.0.2.7/32');
    assert.equal(normalizeCidr('2001:DB8:0:0:1::/32'), '2001:db8::/32');
    assert.equal(normalizeCidr('::1'), '::1/128');
  });

  test('matches IPv4, IPv6 and IPv4-mapped addresses in their own family', () => {
    assert.ok(addressInCidrs('10.2.3.4', ['10.0.0.0/8']));
    assert.ok(!addressInCidrs('11.2.3.4', ['10.0.0.0/8']));
    assert.ok(addressInCidrs('::ffff:10.2.3.4', ['10.0.0.0/8']), 'a dual-stack socket reports IPv4 clients mapped');
    assert.ok(addressInCidrs('10.2.3.4', ['::ffff:10.0.0.0/104']));
    assert.ok(addressInCidrs('2001:db8::42', ['192.0.2.0/24', '2001:db8::/32']));
    assert.ok(!addressInCidrs('2001:db9::42', ['2001:db8::/32']));
    assert.ok(!addressInCidrs('10.2.3.4', ['::/0']), 'an IPv6 range does not hold IPv4 addresses');
    assert.ok(!addressInCidrs('unknown', ['0.0.0.0/0']), 'an unparsable address matches nothing');
    assert.ok(!addressInCidrs('', ['0.0.0.0/0']));
  });

  test('reads the for= nodes of RFC 7239 Forwarded, ports and quotes removed', () => {
    assert.deepEqual(forwardedFor('for=192.0.2.60;proto=http;by=203.0.113.43'), ['192.0.2.60']);
    assert.deepEqual(forwardedFor('For="[2001:db8:cafe::17]:4711", for=198.51.100.17:80'), ['2001:db8:cafe::17', '198.51.100.17']);
    assert.deepEqual(forwardedFor('for=unknown, for=_hidden'), ['unknown', '_hidden']);
    assert.deepEqual(forwardedFor('proto=https'), []);
  });

  test('believes a forwarding header only from a trusted peer, walking from the right', () => {
    const req = (peer: string, headers: Record<string, string> = {}) => ({ headers, socket: { remoteAddress: peer } });
    const none = new ClientAddressResolver([]);
    assert.equal(none.of(req('192.0.2.1', { 'x-forwarded-for': '10.0.0.1' })), '192.0.2.1', 'no trusted proxy: the socket');

    const xff = new ClientAddressResolver(['10.0.0.0/8']);
    assert.equal(xff.of(req('10.0.0.1', { 'x-forwarded-for': '198.51.100.7' })), '198.51.100.7');
    assert.equal(xff.of(req('10.0.0.1', { 'x-forwarded-for': '1.1.1.1, 198.51.100.7, 10.0.0.2' })), '198.51.100.7', 'trusted hops skipped');
    assert.equal(xff.of(req('192.0.2.1', { 'x-forwarded-for': '198.51.100.7' })), '192.0.2.1', 'untrusted peer: its header ignored');
    assert.equal(xff.of(req('10.0.0.1', { forwarded: 'for=198.51.100.7' })), '10.0.0.1', 'the other header is not read');
    assert.equal(xff.of(req('::ffff:10.0.0.1', { 'x-forwarded-for': '198.51.100.7' })), '198.51.100.7', 'a mapped peer is trusted');

    const fwd = new ClientAddressResolver(['10.0.0.0/8'], 'forwarded');
    assert.equal(fwd.of(req('10.0.0.1', { forwarded: 'for="[2001:db8::1]:443";proto=https' })), '2001:db8::1');
    assert.equal(fwd.of(req('10.0.0.1', { forwarded: 'for=1.1.1.1, for=198.51.100.7, for=10.0.0.3' })), '198.51.100.7');
    assert.equal(fwd.of(req('10.0.0.1', { 'x-forwarded-for': '198.51.100.7' })), '10.0.0.1');
    assert.equal(
      fwd.of(req('10.0.0.1', { forwarded: 'for=_hidden' })),
      '_hidden',
      'an obfuscated node is the client (and matches nothing)',
    );
  });

  test('configuration: TRUSTED_PROXIES, FORWARDED_HEADER and PRIVATE_HOST_SUFFIXES', () => {
    assert.deepEqual(loadConfig({}).network, { privateHostSuffixes: [], trustedProxies: [], forwardedHeader: 'x-forwarded-for' });
    const c = loadConfig({
      TRUSTED_PROXIES: '10.0.0.0/8, fd00::/8',
      FORWARDED_HEADER: 'forwarded',
      PRIVATE_HOST_SUFFIXES: '.PL.example.com,.internal.example.com',
    });
    assert.deepEqual(c.network, {
      privateHostSuffixes: ['.pl.example.com', '.internal.example.com'],
      trustedProxies: ['10.0.0.0/8', 'fd00::/8'],
      forwardedHeader: 'forwarded',
    });
    assert.throws(
      () => loadConfig({ TRUSTED_PROXIES: '10.0.0.0/8,nope' }),
      (e: Error) => e instanceof ConfigError && /TRUSTED_PROXIES/.test(e.message),
    );
    assert.throws(() => loadConfig({ FORWARDED_HEADER: 'x-real-ip' }), ConfigError);
    assert.throws(() => loadConfig({ PRIVATE_HOST_SUFFIXES: 'pl.example.com' }), ConfigError);
  });
});
