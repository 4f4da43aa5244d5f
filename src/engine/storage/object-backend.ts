/**
 * What the gateway itself does with stored objects (the engine reads and writes tables on its own): list a prefix,
 * measure it, read and delete single objects, delete a whole prefix, and check that the store answers. One
 * implementation per kind of store (local-backend.ts, s3-backend.ts, …). Keys are relative to the profile's root,
 * '/'-separated, never starting with '/'; a "folder" is a key prefix without its trailing '/'.
 */
export interface StoredObject {
  /** Key relative to the profile's root. */
  key: string;
  size: number;
  modifiedMs: number;
}

export interface ObjectBackend {
  /** Every object under a folder, recursively (an object whose key equals `folder` is listed itself); none when absent. */
  listRecursive(folder: string): Promise<StoredObject[]>;
  /** Entries directly under a folder, where the store has real folders (empty ones included); else derived from listRecursive. */
  listChildren?(folder: string): Promise<Array<{ name: string; isDir: boolean }>>;
  /** True when at least one object lies under the folder (cheaper than a listing). */
  exists(folder: string): Promise<boolean>;
  read(key: string): Promise<Buffer>;
  /** Deletes one object; absent is fine. */
  removeObject(key: string): Promise<void>;
  /** Deletes everything under a folder; nothing there is fine. */
  removeFolder(folder: string): Promise<void>;
  /** Throws, with a message fit for /readyz (no secrets), when the store cannot be reached or read. */
  probe(): Promise<void>;
  /** The path the engine reports for a key (object_store's `Path`): the key under the bucket, or the absolute path without its leading '/'. */
  objectPath(key: string): string;
  /**
   * Copies object `from` to `to` only if `to` does not exist, atomically (a reader never sees part of it, and of two
   * concurrent publishers of the same `to` exactly one wins): false when `to` exists. Manifests of catalog-managed
   * versions are published this way. Absent where the store cannot do it.
   */
  publishIfAbsent?(from: string, to: string): Promise<boolean>;
  close?(): void;
}
