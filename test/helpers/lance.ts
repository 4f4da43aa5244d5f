import * as path from 'node:path';
import * as lancedb from '@lancedb/lancedb';
import { activeS3 } from './s3';

/**
 * The folder and table name of a location, and how to connect there: an absolute local path as is, or an `s3://`
 * URI on the object-store pass with the local S3 server's storage options (what a namespace-mode client is vended).
 */
function target(location: string): { dir: string; name: string; opts: Partial<lancedb.ConnectionOptions> } {
  if (location.startsWith('s3://')) {
    const cut = location.lastIndexOf('/');
    return {
      dir: location.slice(0, cut),
      name: location.slice(cut + 1).replace(/\.lance$/, ''),
      opts: { storageOptions: activeS3().options },
    };
  }
  return { dir: path.dirname(location), name: path.basename(location, '.lance'), opts: {} };
}

async function connectTo(location: string): Promise<{ db: lancedb.Connection; name: string }> {
  const { dir, name, opts } = target(location);
  return { db: await lancedb.connect(dir, opts), name };
}

/**
 * Writes table data the way a namespace-mode client does: with the official engine, straight at the location the
 * catalog handed out (an absolute `<folder>/<name>.lance` path on the local store, an `s3://…/<name>.lance` URI).
 */
export async function writeTable(location: string, rows: Record<string, unknown>[]): Promise<void> {
  const { db, name } = await connectTo(location);
  try {
    (await db.createTable(name, rows, { mode: 'overwrite' })).close();
  } finally {
    db.close();
  }
}

/** Appends rows to the existing table at `location`. */
export async function appendRows(location: string, rows: Record<string, unknown>[], branch?: string): Promise<void> {
  const { db, name } = await connectTo(location);
  try {
    const t = await db.openTable(name, undefined, branch ? ({ branch } as never) : {});
    try {
      await t.add(rows);
    } finally {
      t.close();
    }
  } finally {
    db.close();
  }
}

/** Creates branch `branch` of the table at `location` (from main) and adds `rows` on it. */
export async function branchAndAdd(location: string, branch: string, rows: Record<string, unknown>[]): Promise<void> {
  const { db, name } = await connectTo(location);
  try {
    const t = await db.openTable(name);
    try {
      const b = await (await t.branches()).create(branch);
      try {
        await b.add(rows);
      } finally {
        b.close();
      }
    } finally {
      t.close();
    }
  } finally {
    db.close();
  }
}

/** Rows in the table at `location`, read with the official engine. */
export async function countRows(location: string): Promise<number> {
  const { db, name } = await connectTo(location);
  try {
    const t = await db.openTable(name);
    try {
      return await t.countRows();
    } finally {
      t.close();
    }
  } finally {
    db.close();
  }
}
