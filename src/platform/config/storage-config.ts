import * as path from 'node:path';
import { StorageProfile, StorageScheme } from './storage-profile';

/**
 * STORAGE_ROOT / STORAGE_OPTIONS / STORAGE_CLIENT_OPTIONS / STORAGE_PROFILES → storage profiles, checked once at
 * start-up. Problems are returned as lines for the one "Invalid configuration" message; no option value (they hold
 * secrets) ever appears in one.
 */
export const DEFAULT_PROFILE = 'default';
const PROFILE_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const SCHEMES: Record<string, StorageScheme> = {
  s3: 's3',
  s3a: 's3',
  gs: 'gs',
  gcs: 'gs',
  az: 'az',
  azure: 'az',
  abfs: 'az',
  file: 'file',
};

export interface StorageConfig {
  defaultProfile: string;
  profiles: Map<string, StorageProfile>;
}

interface RawProfile {
  root?: unknown;
  options?: unknown;
  client_options?: unknown;
  vend?: unknown;
  role_arn?: unknown;
  sts_endpoint?: unknown;
  sts_region?: unknown;
  external_id?: unknown;
  duration_seconds?: unknown;
}

function parseJson(name: string, text: string | undefined, problems: string[]): unknown {
  if (text === undefined || text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    problems.push(`${name}: not valid JSON`);
    return undefined;
  }
}

/** A JSON object of option values: strings (numbers and booleans are written as strings, as Lance wants them). */
function stringMap(where: string, v: unknown, problems: string[]): Record<string, string> | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'object' || Array.isArray(v)) {
    problems.push(`${where}: must be a JSON object of option names to string values`);
    return undefined;
  }
  const out: Record<string, string> = {};
  for (const [k, val] of Object.entries(v as Record<string, unknown>)) {
    if (typeof val === 'string') out[k] = val;
    else if (typeof val === 'number' || typeof val === 'boolean') out[k] = String(val);
    else problems.push(`${where}.${k}: must be a string`);
  }
  return out;
}

/** `s3://bucket/prefix` → its parts; a plain path (or file://) → a local root. */
export function parseRoot(
  root: string,
  dataDir: string,
): { scheme: StorageScheme; root: string; bucket?: string; prefix: string } | string {
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/(.*)$/.exec(root.trim());
  if (!m) return { scheme: 'file', root: path.resolve(dataDir, root.trim()), prefix: '' };
  const scheme = SCHEMES[m[1].toLowerCase()];
  if (!scheme) return `unknown scheme '${m[1]}://' (use a local path, s3://, gs:// or az://)`;
  if (scheme === 'file') {
    if (!m[2].startsWith('/')) return 'file:// roots must be absolute (file:///path)';
    return { scheme, root: path.resolve(m[2]), prefix: '' };
  }
  const [bucket, ...rest] = m[2].split('/');
  if (!bucket || !/^[a-z0-9][a-z0-9._-]{1,253}$/i.test(bucket)) return `'${m[1]}://' root needs a bucket name: ${m[1]}://<bucket>[/prefix]`;
  const parts = rest.filter((s) => s !== '');
  if (parts.some((s) => s === '.' || s === '..')) return 'the prefix must not contain . or .. segments';
  const prefix = parts.join('/');
  return { scheme, root: `${scheme}://${bucket}${prefix ? `/${prefix}` : ''}`, bucket, prefix };
}

function profileFrom(name: string, raw: RawProfile, dataDir: string, problems: string[], fromEnv = false): StorageProfile | undefined {
  const where = `STORAGE_PROFILES.${name}`;
  // The default profile made from the environment is reported under the variables' own names.
  const names = fromEnv
    ? { root: 'STORAGE_ROOT', options: 'STORAGE_OPTIONS', client: 'STORAGE_CLIENT_OPTIONS' }
    : { root: `${where}.root`, options: `${where}.options`, client: `${where}.client_options` };
  if (typeof raw.root !== 'string' || raw.root.trim() === '') {
    problems.push(`${names.root}: required (a local path or s3://, gs://, az:// URI)`);
    return undefined;
  }
  const parsed = parseRoot(raw.root, dataDir);
  if (typeof parsed === 'string') {
    problems.push(`${names.root}: ${parsed}`);
    return undefined;
  }
  const options = stringMap(names.options, raw.options, problems) ?? {};
  const clientOptions = stringMap(names.client, raw.client_options, problems);
  if (raw.vend !== undefined && typeof raw.vend !== 'boolean') problems.push(`${where}.vend: must be true or false`);
  let sts: StorageProfile['sts'];
  if (raw.role_arn !== undefined) {
    if (typeof raw.role_arn !== 'string' || !/^arn:[a-z-]+:iam::\d{12}:role\/\S+$/.test(raw.role_arn)) {
      problems.push(`${where}.role_arn: must be an IAM role ARN (arn:aws:iam::<account>:role/<name>)`);
    } else if (parsed.scheme !== 's3') {
      problems.push(`${where}.role_arn: temporary credentials (STS) are only available for s3:// roots`);
    } else {
      const duration = raw.duration_seconds === undefined ? 3600 : Number(raw.duration_seconds);
      if (!Number.isInteger(duration) || duration < 900 || duration > 43200)
        problems.push(`${where}.duration_seconds: must be an integer from 900 to 43200`);
      for (const k of ['sts_endpoint', 'sts_region', 'external_id'] as const) {
        if (raw[k] !== undefined && typeof raw[k] !== 'string') problems.push(`${where}.${k}: must be a string`);
      }
      if (typeof raw.sts_endpoint === 'string' && !/^https?:\/\/\S+$/.test(raw.sts_endpoint))
        problems.push(`${where}.sts_endpoint: must be an http(s):// URL`);
      sts = {
        roleArn: raw.role_arn,
        endpoint: raw.sts_endpoint as string | undefined,
        region: (raw.sts_region as string | undefined) ?? options.aws_region ?? options.region,
        externalId: raw.external_id as string | undefined,
        durationSeconds: duration,
      };
    }
  }
  return { name, ...parsed, options, clientOptions, vend: raw.vend !== false, sts };
}

export function loadStorageConfig(
  e: {
    STORAGE_ROOT?: string;
    STORAGE_OPTIONS?: string;
    STORAGE_CLIENT_OPTIONS?: string;
    STORAGE_PROFILES?: string;
    STORAGE_ROLE_ARN?: string;
  },
  dataDir: string,
  problems: string[],
): StorageConfig {
  const profiles = new Map<string, StorageProfile>();
  const raw = parseJson('STORAGE_PROFILES', e.STORAGE_PROFILES, problems);
  const named: Record<string, RawProfile> = {};
  if (raw !== undefined) {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
      problems.push('STORAGE_PROFILES: must be a JSON object of profile name to {root, options, …}');
    else
      for (const [name, p] of Object.entries(raw as Record<string, unknown>)) {
        if (!PROFILE_NAME.test(name))
          problems.push(`STORAGE_PROFILES: profile name '${name.slice(0, 64)}' must be 1-64 letters, digits, _ or -`);
        else if (typeof p !== 'object' || p === null || Array.isArray(p))
          problems.push(`STORAGE_PROFILES.${name}: must be an object {root, options, …}`);
        else named[name] = p as RawProfile;
      }
  }
  const defaultFromEnv = e.STORAGE_ROOT !== undefined || e.STORAGE_OPTIONS !== undefined || e.STORAGE_CLIENT_OPTIONS !== undefined;
  if (named[DEFAULT_PROFILE] && defaultFromEnv) {
    problems.push(`STORAGE_PROFILES.${DEFAULT_PROFILE}: set either it or STORAGE_ROOT/STORAGE_OPTIONS/STORAGE_CLIENT_OPTIONS, not both`);
  }
  const def: RawProfile = named[DEFAULT_PROFILE] ?? {
    root: e.STORAGE_ROOT ?? path.join(dataDir, 'tables'),
    options: parseJson('STORAGE_OPTIONS', e.STORAGE_OPTIONS, problems),
    client_options: parseJson('STORAGE_CLIENT_OPTIONS', e.STORAGE_CLIENT_OPTIONS, problems),
    ...(e.STORAGE_ROLE_ARN ? { role_arn: e.STORAGE_ROLE_ARN } : {}),
  };
  const d = profileFrom(DEFAULT_PROFILE, def, dataDir, problems, !named[DEFAULT_PROFILE]);
  if (d) profiles.set(DEFAULT_PROFILE, d);
  for (const [name, p] of Object.entries(named)) {
    if (name === DEFAULT_PROFILE) continue;
    const prof = profileFrom(name, p, dataDir, problems);
    if (prof) profiles.set(name, prof);
  }
  return { defaultProfile: DEFAULT_PROFILE, profiles };
}
