import proxyaddr from '@fastify/proxy-addr';
import ipaddr from 'ipaddr.js';

/**
 * The client address of a request, and CIDR matching, for the network rules of a database
 * (docs/access-control.md, "Network rules").
 *
 * The address is the socket peer's, unless that peer is a trusted proxy (TRUSTED_PROXIES): then the chain of the
 * one forwarding header the proxies write (FORWARDED_HEADER: `X-Forwarded-For`, or RFC 7239 `Forwarded` `for=`) is
 * walked from the right, skipping trusted hops, and the first untrusted one is the client (proxy-addr's rule, and
 * its code: @fastify/proxy-addr). Only one header is read: the one the proxies do not write is the client's to forge.
 */
export type ForwardedHeader = 'x-forwarded-for' | 'forwarded';

/** A parsed CIDR; addresses are compared in their own family (an IPv4-mapped IPv6 address counts as IPv4). */
type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** Why a CIDR is refused, or null when it is valid (`10.0.0.0/8`, `2001:db8::/32`, or one address). */
export function cidrProblem(cidr: string): string | null {
  return parseRange(cidr) ? null : `'${cidr}' is not an IPv4 or IPv6 CIDR (e.g. 10.0.0.0/8, 2001:db8::/32)`;
}

/** The canonical form of a valid CIDR (`10.1.2.3/8` → `10.0.0.0/8`, one address → `/32` or `/128`). */
export function normalizeCidr(cidr: string): string {
  const r = parseRange(cidr);
  if (!r) throw new Error(`invalid CIDR '${cidr}'`);
  const [addr, bits] = r;
  const network =
    addr.kind() === 'ipv4' ? ipaddr.IPv4.networkAddressFromCIDR(`${addr}/${bits}`) : ipaddr.IPv6.networkAddressFromCIDR(`${addr}/${bits}`);
  return `${network.toString()}/${bits}`;
}

/** Only the usual notations: dotted quads (not `10.0.0` or `0x0a.1`) and RFC 4291 IPv6, with a decimal prefix length. */
function parseRange(cidr: string): Range | null {
  const m = /^([^/\s%]+)(?:\/(\d{1,3}))?$/.exec(cidr.trim());
  if (!m) return null;
  const [, addr, bits] = m;
  const v4 = ipaddr.IPv4.isValidFourPartDecimal(addr);
  if (!v4 && !(addr.includes(':') && ipaddr.IPv6.isValid(addr))) return null;
  const max = v4 ? 32 : 128;
  const n = bits === undefined ? max : Number(bits);
  if (n > max) return null;
  try {
    return [ipaddr.parse(addr), n];
  } catch {
    return null;
  }
}

/** Whether `address` lies in one of `cidrs` (valid ones, as stored); an unparsable address matches nothing. */
export function addressInCidrs(address: string, cidrs: readonly string[]): boolean {
  let a: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    a = ipaddr.process(address); // ::ffff:10.1.2.3 → 10.1.2.3
  } catch {
    return false;
  }
  for (const cidr of cidrs) {
    const r = parseRange(cidr);
    if (!r) continue;
    const [net, bits] =
      r[0].kind() === 'ipv6' && (r[0] as ipaddr.IPv6).isIPv4MappedAddress() && r[1] >= 96
        ? [(r[0] as ipaddr.IPv6).toIPv4Address(), r[1] - 96]
        : r;
    if (a.kind() === net.kind() && a.match(net, bits)) return true;
  }
  return false;
}

/** The `for=` nodes of an RFC 7239 `Forwarded` header, left to right; an obfuscated or unknown node stays as is. */
export function forwardedFor(header: string): string[] {
  const out: string[] = [];
  for (const element of header.split(',')) {
    for (const pair of element.split(';')) {
      const eq = pair.indexOf('=');
      if (eq < 0 || pair.slice(0, eq).trim().toLowerCase() !== 'for') continue;
      let v = pair.slice(eq + 1).trim();
      if (v.startsWith('"') && v.endsWith('"') && v.length >= 2) v = v.slice(1, -1);
      // "[2001:db8::1]:4711" → 2001:db8::1; "192.0.2.1:4711" → 192.0.2.1
      const bracket = /^\[([^\]]+)\](?::\d+)?$/.exec(v);
      if (bracket) v = bracket[1];
      else if (/^[\d.]+:\d+$/.test(v)) v = v.slice(0, v.lastIndexOf(':'));
      out.push(v);
    }
  }
  return out;
}

export interface ClientAddressRequest {
  headers: Record<string, string | string[] | undefined>;
  socket?: { remoteAddress?: string } | null;
}

/** Resolves a request's client address under one configuration (TRUSTED_PROXIES, FORWARDED_HEADER). */
export class ClientAddressResolver {
  private readonly trust?: (addr: string, i: number) => boolean;

  constructor(
    trustedProxies: readonly string[],
    private readonly header: ForwardedHeader = 'x-forwarded-for',
  ) {
    if (trustedProxies.length) this.trust = proxyaddr.compile(trustedProxies.map(normalizeCidr));
  }

  /** The client's address ('' when the socket has none, e.g. it closed). */
  of(req: ClientAddressRequest): string {
    const peer = req.socket?.remoteAddress ?? '';
    if (!this.trust || !peer) return peer;
    const raw = req.headers[this.header];
    const value = Array.isArray(raw) ? raw.join(',') : raw;
    if (!value) return peer;
    const chain = this.header === 'forwarded' ? forwardedFor(value) : value.split(',').map((s) => s.trim());
    // proxy-addr reads X-Forwarded-For: the Forwarded chain is handed to it in that form.
    const view = { headers: { 'x-forwarded-for': chain.join(', ') }, socket: { remoteAddress: peer } };
    return proxyaddr(view as never, this.trust);
  }
}
