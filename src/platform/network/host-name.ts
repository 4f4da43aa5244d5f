/**
 * What comes before `suffix` in a Host header (`acme.gw.example.com:443`, `.gw.example.com` → `acme`), compared
 * without case, port or trailing dot; undefined when the host is not `<something><suffix>`. `suffix` is lower case.
 */
export function beforeHostSuffix(host: string | string[] | undefined, suffix: string): string | undefined {
  const h = Array.isArray(host) ? host[0] : host;
  if (!h) return undefined;
  const hostname = h.trim().toLowerCase().replace(/:\d+$/, '').replace(/\.$/, '');
  if (!hostname.endsWith(suffix) || hostname.length === suffix.length) return undefined;
  return hostname.slice(0, -suffix.length);
}
