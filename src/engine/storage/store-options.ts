/**
 * Reading Lance storage options the way the engine (object_store) does: every setting has one canonical key and some
 * aliases, keys are matched case-insensitively, and what the profile's options leave out comes from environment
 * variables with the store's prefix (`GOOGLE_…`, `AZURE_…`), lower-cased and read as keys. An option given in the
 * profile wins over the environment. Values are secrets: nothing here puts a value into an error message.
 */
export type Env = Record<string, string | undefined>;

export function resolveOptions<K extends string>(
  aliases: Record<K, readonly string[]>,
  options: Record<string, string>,
  env: Env,
  envPrefix: string,
): Partial<Record<K, string>> {
  const given = new Map<string, string>();
  for (const [k, v] of Object.entries(options)) if (v !== undefined && v !== '') given.set(k.toLowerCase(), v);
  const fromEnv = new Map<string, string>();
  for (const [k, v] of Object.entries(env)) if (k.startsWith(envPrefix) && v !== undefined && v !== '') fromEnv.set(k.toLowerCase(), v);
  const out: Partial<Record<K, string>> = {};
  for (const key of Object.keys(aliases) as K[]) {
    const names = aliases[key];
    const v = names.map((n) => given.get(n)).find((x) => x !== undefined) ?? names.map((n) => fromEnv.get(n)).find((x) => x !== undefined);
    if (v !== undefined) out[key] = v;
  }
  return out;
}

/** object_store's boolean spelling: 1/true/on/yes/y and 0/false/off/no/n, any case; anything else is a mistake. */
export function truthy(value: string | undefined, key: string): boolean {
  if (value === undefined) return false;
  const v = value.trim().toLowerCase();
  if (['1', 'true', 'on', 'yes', 'y'].includes(v)) return true;
  if (['0', 'false', 'off', 'no', 'n'].includes(v)) return false;
  throw new Error(`${key}: must be true or false`);
}

/** A store's error as one short line for /readyz and logs: no request ids, no query strings (SAS signatures). */
export function shortError(err: unknown): string {
  const e = err as {
    code?: string | number;
    name?: string;
    message?: string;
    statusCode?: number;
    status?: number;
    errors?: Array<{ reason?: string }>;
  };
  // Azure: code 'ContainerNotFound' + statusCode; GCS (ApiError): numeric code + errors[].reason; Node: code 'ECONNREFUSED'.
  const status = e.statusCode ?? e.status ?? (typeof e.code === 'number' ? e.code : undefined);
  const label = typeof e.code === 'string' ? e.code : (e.errors?.[0]?.reason ?? e.name ?? 'error');
  const first = String(e.message ?? '')
    .split('\n')[0]
    .replace(/\?[^\s]*/g, '?…')
    .slice(0, 200);
  return `${label}${typeof status === 'number' ? ` (HTTP ${status})` : ''}: ${first}`;
}
