/** Display helpers. Everything they return is rendered as text (never as HTML). */
export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
}

export const num = (n: number | null | undefined) => (n === null || n === undefined ? '—' : n.toLocaleString('en-US'));

export const when = (iso: string | null | undefined) => (iso ? iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '—');

/** A cell value of a previewed row: long lists (vectors) abbreviated, binary shown by its length. */
export function cell(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'bigint') return v.toString();
  if (v instanceof Uint8Array) return `<${v.length} bytes>`;
  // An Arrow list value (a vector): its values.
  const arrowList = v as { toArray?: () => ArrayLike<unknown> };
  if (typeof v === 'object' && typeof arrowList.toArray === 'function') return cell(Array.from(arrowList.toArray()));
  if (ArrayBuffer.isView(v) || Array.isArray(v)) {
    const items = Array.from(v as ArrayLike<unknown>);
    const shown = items.slice(0, 6).map((x) => (typeof x === 'number' ? Number(x.toPrecision(4)).toString() : cell(x)));
    return `[${shown.join(', ')}${items.length > 6 ? `, … (${items.length} values)` : ''}]`;
  }
  if (v instanceof Date) return v.toISOString();
  if (typeof v === 'object') {
    const json = (v as { toJSON?: () => unknown }).toJSON?.() ?? v;
    const text = JSON.stringify(json, (_k, x: unknown) => (typeof x === 'bigint' ? x.toString() : x));
    return text.length > 200 ? `${text.slice(0, 200)}…` : text;
  }
  const text = String(v);
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}
