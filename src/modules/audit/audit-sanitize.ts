/**
 * What the audit trail stores is made of text Postgres accepts and a reader can trust: NUL (refused by `text` and
 * `jsonb`) and unpaired UTF-16 surrogates (silently replaced by Postgres) are written as `\u0000`-style escapes,
 * long strings are cut, and deep structures are flattened to a marker. Audit details come from request bodies, so
 * this runs on everything that is stored, whatever the edge checks let through.
 */
const MAX_STRING = 4096;
const MAX_DEPTH = 8;
const MAX_ITEMS = 256;

const escapeUnit = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

export function sanitizeText(s: string): string {
  const escaped = s.replace(/\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, escapeUnit);
  return escaped.length > MAX_STRING ? `${escaped.slice(0, MAX_STRING)}…` : escaped;
}

export function sanitizeValue(v: unknown, depth = 0): unknown {
  if (typeof v === 'string') return sanitizeText(v);
  if (v === null || typeof v === 'number' || typeof v === 'boolean') return typeof v === 'number' && !Number.isFinite(v) ? String(v) : v;
  if (typeof v === 'bigint') return v.toString();
  if (typeof v !== 'object') return undefined;
  if (depth >= MAX_DEPTH) return '[nested too deeply]';
  if (Array.isArray(v)) return v.slice(0, MAX_ITEMS).map((x) => sanitizeValue(x, depth + 1) ?? null);
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v as Record<string, unknown>).slice(0, MAX_ITEMS)) {
    const s = sanitizeValue(x, depth + 1);
    if (s !== undefined) out[sanitizeText(k)] = s;
  }
  return out;
}
