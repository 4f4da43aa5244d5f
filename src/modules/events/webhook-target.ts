import * as dns from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * The webhook SSRF guard (docs/events.md, "Webhook targets"): a webhook may only reach public unicast addresses,
 * unless the operator set EVENTS_ALLOW_PRIVATE_TARGETS. It is checked when a sink is made (a literal address, or what
 * the host name resolves to then) and again on every connection (guardedLookup), so a host name that later resolves
 * to a private address (DNS rebinding) is refused too. Redirects are never followed.
 */

/** Why an address may not be a webhook's target (loopback, private, link-local, …), or null when it is public. */
export function privateAddressProblem(address: string): string | null {
  let a: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    a = ipaddr.parse(address);
  } catch {
    return `'${address}' is not an IP address`;
  }
  if (a.kind() === 'ipv6' && (a as ipaddr.IPv6).isIPv4MappedAddress()) a = (a as ipaddr.IPv6).toIPv4Address();
  const range = a.range();
  return range === 'unicast' ? null : `${address} is a ${range} address`;
}

/** Why a webhook URL is refused, or null. `allowPrivate`: http:// and any address are accepted (tests, trusted nets). */
export async function webhookUrlProblem(url: string, allowPrivate: boolean): Promise<string | null> {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'not a URL';
  }
  if (u.username || u.password) return 'a webhook URL may not carry credentials (the signature authenticates the gateway)';
  if (u.protocol !== 'https:' && !(allowPrivate && u.protocol === 'http:')) {
    return 'a webhook needs an https:// URL (http:// only with EVENTS_ALLOW_PRIVATE_TARGETS=true)';
  }
  if (allowPrivate) return null;
  const host = u.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) return privateAddressProblem(host);
  let addresses: dns.LookupAddress[];
  try {
    addresses = await dns.promises.lookup(host, { all: true, verbatim: true });
  } catch {
    return null; // Not resolvable now: each delivery checks again where it connects.
  }
  for (const a of addresses) {
    const problem = privateAddressProblem(a.address);
    if (problem) return `${host} resolves to ${problem}`;
  }
  return null;
}

/** A `lookup` for http(s).request that refuses private addresses (the connection fails with the reason). */
export function guardedLookup(allowPrivate: boolean): typeof dns.lookup {
  const lookup = (hostname: string, options: dns.LookupOptions, callback: (...a: unknown[]) => void) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err);
      const list = addresses as dns.LookupAddress[];
      if (!allowPrivate) {
        for (const a of list) {
          const problem = privateAddressProblem(a.address);
          if (problem) return callback(new Error(`webhook target refused: ${hostname} resolves to ${problem}`));
        }
      }
      if (options.all) return callback(null, list);
      return callback(null, list[0].address, list[0].family);
    });
  };
  return lookup as unknown as typeof dns.lookup;
}
