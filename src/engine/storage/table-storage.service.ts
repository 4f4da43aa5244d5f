import * as path from 'node:path';
import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../../platform/config/config';
import { Errors } from '../../platform/http/errors';
import { LocalBackend } from './local-backend';
import { ObjectBackend } from './object-backend';
import type { AzureBackend } from './azure-backend';
import type { GcsBackend } from './gcs-backend';
import type { S3Backend } from './s3-backend';
import { StorageProfile } from '../../platform/config/storage-profile';

const PREFIXES_FOLDER = '.prefixes';
/** Locations of tables in a profile other than the default start with `@<profile>/`. */
const PROFILE_MARK = '@';

/** One entry directly under a prefix (a folder on disk; a common prefix on an object store). */
export interface StorageEntry {
  name: string;
  isDir: boolean;
}

/** One stored file (object), its path in location space (as catalog locations are written). */
export interface StorageFile {
  path: string;
  size: number;
  modifiedMs: number;
}

/** What lies under a prefix, recursively. `modifiedMs` is the newest file's (null when there are none). */
export interface StorageUsage {
  bytes: number;
  files: number;
  modifiedMs: number | null;
}

/** Where the engine finds a table: the folder (URI) holding it, its name, and the options to reach the store. */
export interface EngineTarget {
  dir: string;
  name: string;
  /** The server's own storage options (secret); undefined for local folders. */
  options?: Record<string, string>;
}

/**
 * Where table data lives and what it holds. Catalog rows keep locations relative to their storage profile's root
 * (`<database>/<uuid>.lance`, or `@<profile>/<database>/<uuid>.lance` for a profile other than the default), so a
 * root can move and no table name ever becomes part of a path: names such as `..` cannot escape, and a
 * dropped-then-recreated name gets a new folder. Each profile's store (a local folder, an S3 bucket, …) is reached
 * through one ObjectBackend; what is inside a table is read by LanceEngine, never here.
 */
@Injectable()
export class TableStorage implements OnModuleDestroy, OnApplicationBootstrap {
  private readonly log = new Logger('Storage');
  private readonly backends = new Map<string, ObjectBackend>();
  private readonly removeListeners: Array<(prefix: string) => void> = [];
  /** What the start-up check found per S3 profile: whether the store honours conditional creates. */
  readonly conditionalCreates = new Map<string, boolean>();

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  /**
   * Warns (once, at start-up, without delaying it) about an S3-compatible store that ignores conditional creates:
   * Lance commits through them, so there concurrent writers of one table can lose commits without an error.
   */
  onApplicationBootstrap(): void {
    for (const p of this.profiles()) {
      if (p.scheme !== 's3') continue;
      const b = this.backend(p) as ObjectBackend & { conditionalCreateHonoured?: () => Promise<boolean> };
      b.conditionalCreateHonoured?.().then(
        (ok) => {
          this.conditionalCreates.set(p.name, ok);
          if (ok) this.log.log(`storage profile '${p.name}' (${p.root}): the store honours conditional creates`);
          else {
            this.log.warn(
              `storage profile '${p.name}' (${p.root}): the store ignores conditional creates (If-None-Match: *); concurrent writers of one table can overwrite each other's commits there. Use a store that honours them (AWS S3, MinIO, recent Ceph) or one writer per table.`,
            );
          }
        },
        (err: Error) =>
          this.log.warn(`storage profile '${p.name}' (${p.root}): could not check conditional creates: ${err.message.slice(0, 200)}`),
      );
    }
  }

  onModuleDestroy(): void {
    for (const b of this.backends.values()) b.close?.();
    this.backends.clear();
  }

  /** A profile by name; unknown names are the caller's mistake (400). */
  profile(name: string = this.config.storage.defaultProfile): StorageProfile {
    const p = this.config.storage.profiles.get(name);
    if (!p)
      throw Errors.invalidInput(`unknown storage profile '${name}' (configured: ${[...this.config.storage.profiles.keys()].join(', ')})`);
    return p;
  }

  profiles(): StorageProfile[] {
    return [...this.config.storage.profiles.values()];
  }

  private backend(profile: StorageProfile): ObjectBackend {
    let b = this.backends.get(profile.name);
    if (!b) {
      b = makeBackend(profile);
      this.backends.set(profile.name, b);
    }
    return b;
  }

  /** A location's profile and its key under that profile's root. */
  private split(location: string): { profile: StorageProfile; key: string } {
    const l = path.sep === '/' ? location : location.split(path.sep).join('/');
    if (l.startsWith(PROFILE_MARK)) {
      const slash = l.indexOf('/');
      const name = l.slice(1, slash < 0 ? undefined : slash);
      return { profile: this.profile(name), key: slash < 0 ? '' : l.slice(slash + 1) };
    }
    return { profile: this.profile(), key: l };
  }

  private join(profile: StorageProfile, key: string): string {
    const k = key.replace(/^\/+/, '');
    return profile.name === this.config.storage.defaultProfile ? k : `${PROFILE_MARK}${profile.name}${k ? `/${k}` : ''}`;
  }

  /**
   * The folder of one catalog of a database, as a location: `<database>` for the default catalog,
   * `<database>/.prefixes/<a+b>` for prefix `a/b`, under `@<profile>/` outside the default profile. Each prefix is
   * one folder next to the others (never nested in another catalog's folder), and the default catalog may not
   * register paths under `.prefixes`, so no catalog can reach another's data.
   */
  databaseFolder(databaseName: string, catalog: string, profile?: string): string {
    const rel = catalog === '' ? databaseName : `${databaseName}/${PREFIXES_FOLDER}/${catalog.split('/').join('+')}`;
    return this.join(this.profile(profile), rel);
  }

  /** The name of the database a table location lies in (the first folder of its key; see databaseFolder). */
  databaseOf(location: string): string {
    const l = path.sep === '/' ? location : location.split(path.sep).join('/');
    const key = l.startsWith(PROFILE_MARK) ? l.slice(l.indexOf('/') + 1) : l;
    return key.split('/')[0];
  }

  /** A fresh location for a new table of the given database/catalog. */
  newLocation(databaseName: string, catalog: string, profile?: string): string {
    return `${this.databaseFolder(databaseName, catalog, profile)}/${randomUUID()}.lance`;
  }

  /** The URI the engine and clients use for a location: an absolute path (local), or `s3://bucket/prefix/…`. */
  uri(location: string): string {
    const { profile, key } = this.split(location);
    if (profile.scheme === 'file') return path.resolve(profile.root, key);
    return key ? `${profile.root}/${key}` : profile.root;
  }

  /** The storage profile a location lies in. */
  profileOf(location: string): StorageProfile {
    return this.split(location).profile;
  }

  /** The object key of a location under its bucket (object stores), e.g. for a vended credential's scope. */
  objectKey(location: string): string {
    const { profile, key } = this.split(location);
    return profile.prefix ? `${profile.prefix}/${key}` : key;
  }

  /** How the engine opens a location. */
  engineTarget(location: string): EngineTarget {
    const { profile } = this.split(location);
    const uri = this.uri(location);
    const cut = uri.lastIndexOf('/');
    const dir = uri.slice(0, cut);
    const name = uri.slice(cut + 1).replace(/\.lance$/, '');
    return { dir, name, options: profile.scheme === 'file' ? undefined : profile.options };
  }

  /** Makes a local folder for a new table; object stores need nothing (the engine writes the first object). */
  async prepare(location: string): Promise<void> {
    const { profile, key } = this.split(location);
    const b = this.backend(profile);
    if (b instanceof LocalBackend) await b.prepare(key);
  }

  /**
   * Validates a location given to register_table: relative to the database's folder (or a URI inside it), and
   * holding a Lance table. Returns the location in catalog form.
   */
  async resolveRegistered(databaseName: string, catalog: string, location: string, profileName?: string): Promise<string> {
    const base = this.databaseFolder(databaseName, catalog, profileName);
    let relative = location;
    if (location.includes('://')) {
      const folderUri = this.uri(base);
      const asUri = this.profile(profileName).scheme === 'file' ? location.replace(/^file:\/\//, '') : location;
      if (!asUri.startsWith(`${folderUri}/`)) {
        throw Errors.invalidInput(
          `Absolute URIs are only allowed inside the database's own storage folder; otherwise location must be a relative path within the database folder: ${location}`,
        );
      }
      relative = asUri.slice(folderUri.length + 1);
    } else if (path.isAbsolute(location) || location.startsWith('/') || location.startsWith('\\')) {
      throw Errors.invalidInput(
        `Absolute paths are not allowed for register_table. Location must be a relative path within the database folder: ${location}`,
      );
    }
    const segments = relative.split(/[\\/]+/);
    if (segments.includes('..')) {
      throw Errors.invalidInput(`Path traversal is not allowed. Location must be a relative path within the database folder: ${location}`);
    }
    const rel = path.posix.normalize(`${base}/${segments.filter((s) => s !== '' && s !== '.').join('/')}`);
    if (catalog === '' && rel.startsWith(`${base}/${PREFIXES_FOLDER}/`)) {
      throw Errors.invalidInput(`register_table location must not point into another catalog's folder: ${location}`);
    }
    if (rel === base || !rel.startsWith(`${base}/`) || !rel.endsWith('.lance')) {
      throw Errors.invalidInput(`register_table location must name a '<name>.lance' folder inside the database folder: ${location}`);
    }
    if (!(await this.hasData(rel))) throw Errors.invalidInput(`no Lance table found at location ${location}`);
    return rel;
  }

  /** True when the location holds at least one committed Lance version. */
  async hasData(location: string): Promise<boolean> {
    // A folder listing where the store has folders (no stat of each file): on local disk one open of `_versions`,
    // which fails at once for a declared table (LocalBackend.listChildren); one LIST request on object stores.
    const entries = await this.list(`${location}/_versions`).catch(() => []);
    return entries.some((e) => !e.isDir && e.name.endsWith('.manifest'));
  }

  /** `fn` is told of every prefix about to be removed (LanceEngine closes the table handles it keeps there). */
  onRemove(fn: (prefix: string) => void): void {
    this.removeListeners.push(fn);
  }

  /** Removes everything under a prefix (a table's or a database's folder); nothing there is fine. */
  async remove(location: string): Promise<void> {
    const { profile, key } = this.split(location);
    if (key.replace(/\/+$/, '') === '') return; // never a whole root
    for (const fn of this.removeListeners) fn(location.replace(/\/+$/, ''));
    await this.backend(profile).removeFolder(key);
  }

  // The primitives below are what crash safety (src/modules/reclaim) needs from storage: list a prefix, measure and
  // remove it, read and remove single files. Every backend implements them.

  /** Entries directly under a prefix, by name; none when it does not exist. */
  async list(prefix: string): Promise<StorageEntry[]> {
    const { profile, key } = this.split(prefix);
    const base = key.replace(/\/+$/, '');
    const backend = this.backend(profile);
    if (backend.listChildren) {
      return (await backend.listChildren(base)).sort(byName);
    }
    const start = base === '' ? '' : `${base}/`;
    const seen = new Map<string, boolean>();
    for (const o of await backend.listRecursive(base)) {
      if (!o.key.startsWith(start)) continue;
      const rest = o.key.slice(start.length);
      const slash = rest.indexOf('/');
      const name = slash < 0 ? rest : rest.slice(0, slash);
      if (name) seen.set(name, (seen.get(name) ?? false) || slash >= 0);
    }
    return [...seen.entries()].map(([name, isDir]) => ({ name, isDir })).sort(byName);
  }

  /** Every file under a prefix, recursively (a file given as the prefix is listed itself). */
  async listFiles(prefix: string): Promise<StorageFile[]> {
    const { profile, key } = this.split(prefix);
    const objects = await this.backend(profile).listRecursive(key.replace(/\/+$/, ''));
    return objects.map((o) => ({ path: this.join(profile, o.key), size: o.size, modifiedMs: o.modifiedMs }));
  }

  /** Bytes, files and the newest modification under a prefix. */
  async usage(prefix: string): Promise<StorageUsage> {
    const files = await this.listFiles(prefix);
    return {
      bytes: files.reduce((n, f) => n + f.size, 0),
      files: files.length,
      modifiedMs: files.length ? Math.max(...files.map((f) => f.modifiedMs)) : null,
    };
  }

  async read(file: string): Promise<Buffer> {
    const { profile, key } = this.split(file);
    return this.backend(profile).read(key);
  }

  async removeFile(file: string): Promise<void> {
    const { profile, key } = this.split(file);
    await this.backend(profile).removeObject(key);
  }

  /** Whether a profile's store can publish manifests put-if-absent (what catalog-managed versions need). */
  canPublish(profileName?: string): boolean {
    return typeof this.backend(this.profile(profileName)).publishIfAbsent === 'function';
  }

  /**
   * Copies file `from` to `to` unless `to` exists, atomically (see ObjectBackend.publishIfAbsent): false when it
   * exists. 406 where the profile's store cannot do it.
   */
  async publishIfAbsent(from: string, to: string): Promise<boolean> {
    const a = this.split(from);
    const b = this.split(to);
    if (a.profile.name !== b.profile.name) throw new Error('publishIfAbsent across storage profiles');
    const backend = this.backend(a.profile);
    if (!backend.publishIfAbsent) {
      throw Errors.unsupported(`catalog-managed versions are not available on storage profile '${a.profile.name}' (${a.profile.scheme})`);
    }
    return backend.publishIfAbsent(a.key, b.key);
  }

  /** The path the engine reports for a stored file (object_store's `Path`), e.g. a version's `manifest_path`. */
  objectPath(file: string): string {
    const { profile, key } = this.split(file);
    return this.backend(profile).objectPath(key);
  }

  /** Every profile's store answering (for /readyz): profile name → null, or what is wrong (no secrets). */
  async probe(): Promise<Record<string, string | null>> {
    const out: Record<string, string | null> = {};
    await Promise.all(
      this.profiles().map(async (p) => {
        try {
          await this.backend(p).probe();
          out[p.name] = null;
        } catch (err) {
          out[p.name] = (err as Error).message.slice(0, 300);
        }
      }),
    );
    return out;
  }

  /** The roots as they may appear in engine messages (to cut them out): local paths and `bucket/prefix` forms. */
  rootsForMessages(): string[] {
    return this.profiles().flatMap((p) => (p.scheme === 'file' ? [p.root] : [p.root, [p.bucket, p.prefix].filter(Boolean).join('/')]));
  }
}

const byName = (a: StorageEntry, b: StorageEntry): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

function makeBackend(profile: StorageProfile): ObjectBackend {
  switch (profile.scheme) {
    case 'file':
      return new LocalBackend(profile.root);
    // Each cloud SDK is loaded only when a profile uses that store (they cost 5-20 MB of memory each).
    case 's3':
      return new (require('./s3-backend') as { S3Backend: typeof S3Backend }).S3Backend(profile);
    case 'gs':
      return new (require('./gcs-backend') as { GcsBackend: typeof GcsBackend }).GcsBackend(profile);
    case 'az':
      return new (require('./azure-backend') as { AzureBackend: typeof AzureBackend }).AzureBackend(profile);
  }
}
