import * as fs from 'node:fs';
import * as path from 'node:path';
import { ObjectBackend, StoredObject } from './object-backend';

/** A local folder as an object store. Nothing outside the root is ever listed, read or deleted; links are not followed. */
export class LocalBackend implements ObjectBackend {
  constructor(private readonly root: string) {}

  private inside(key: string, rootAllowed = false): string | null {
    const abs = path.resolve(this.root, key);
    if (abs.startsWith(this.root + path.sep)) return abs;
    return rootAllowed && abs === this.root ? abs : null;
  }

  async listRecursive(folder: string): Promise<StoredObject[]> {
    const start = this.inside(folder, true);
    if (!start) return [];
    const out: StoredObject[] = [];
    const visit = async (abs: string): Promise<void> => {
      let st: fs.Stats;
      try {
        st = await fs.promises.lstat(abs);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return; // removed meanwhile
        throw err;
      }
      if (!st.isDirectory()) {
        if (st.isFile()) out.push({ key: path.relative(this.root, abs).split(path.sep).join('/'), size: st.size, modifiedMs: st.mtimeMs });
        return;
      }
      let names: string[];
      try {
        names = await fs.promises.readdir(abs);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return;
        throw err;
      }
      for (const n of names.sort()) await visit(path.join(abs, n));
    };
    await visit(start);
    return out;
  }

  listChildren(folder: string): Promise<Array<{ name: string; isDir: boolean }>> {
    const abs = this.inside(folder, true);
    if (!abs) return Promise.resolve([]);
    // The callback form: a missing folder's error is made where libuv reports it, without the asynchronous stack
    // trace a rejected fs.promises call captures (a declared table's describe looks for a folder that is not there).
    return new Promise((resolve, reject) =>
      fs.readdir(abs, { withFileTypes: true }, (err, entries) => {
        if (!err) return resolve(entries.map((e) => ({ name: e.name, isDir: e.isDirectory() })));
        if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return resolve([]);
        reject(err);
      }),
    );
  }

  async exists(folder: string): Promise<boolean> {
    const abs = this.inside(folder, true);
    if (!abs) return false;
    try {
      const st = await fs.promises.stat(abs);
      return st.isFile() || (await fs.promises.readdir(abs)).length > 0;
    } catch {
      return false;
    }
  }

  async read(key: string): Promise<Buffer> {
    const abs = this.inside(key);
    if (!abs) throw new Error(`not a stored file: ${key}`);
    return fs.promises.readFile(abs);
  }

  async removeObject(key: string): Promise<void> {
    const abs = this.inside(key);
    if (abs) await fs.promises.rm(abs, { force: true });
  }

  async removeFolder(folder: string): Promise<void> {
    const abs = this.inside(folder);
    if (abs) await fs.promises.rm(abs, { recursive: true, force: true });
  }

  async probe(): Promise<void> {
    await fs.promises.mkdir(this.root, { recursive: true });
    await fs.promises.access(this.root, fs.constants.R_OK | fs.constants.W_OK);
  }

  /** A hard link: created whole or not at all, and EEXIST when the target exists. */
  async publishIfAbsent(from: string, to: string): Promise<boolean> {
    const src = this.inside(from);
    const dst = this.inside(to);
    if (!src || !dst) throw new Error(`not a stored file: ${!src ? from : to}`);
    await fs.promises.mkdir(path.dirname(dst), { recursive: true });
    try {
      await fs.promises.link(src, dst);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw err;
    }
  }

  objectPath(key: string): string {
    return path.resolve(this.root, key).split(path.sep).filter(Boolean).join('/');
  }

  /** A local folder for a table about to be made (the engine makes its own on object stores). */
  async prepare(key: string): Promise<void> {
    const abs = this.inside(key);
    if (abs) await fs.promises.mkdir(abs, { recursive: true });
  }
}
