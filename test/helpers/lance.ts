import * as path from 'node:path';
import * as lancedb from '@lancedb/lancedb';

/**
 * Writes table data the way a namespace-mode client does: with the official engine, straight at the location the
 * catalog handed out (an absolute `<folder>/<name>.lance` path on the local store).
 */
export async function writeTable(location: string, rows: Record<string, unknown>[]): Promise<void> {
  const db = await lancedb.connect(path.dirname(location));
  try {
    (await db.createTable(path.basename(location, '.lance'), rows, { mode: 'overwrite' })).close();
  } finally {
    db.close();
  }
}

/** Appends rows to the existing table at `location`. */
export async function appendRows(location: string, rows: Record<string, unknown>[], branch?: string): Promise<void> {
  const db = await lancedb.connect(path.dirname(location));
  try {
    const t = await db.openTable(path.basename(location, '.lance'), undefined, branch ? ({ branch } as never) : {});
    try {
      await t.add(rows);
    } finally {
      t.close();
    }
  } finally {
    db.close();
  }
}

/** Creates branch `name` of the table at `location` (from main) and adds `rows` on it. */
export async function branchAndAdd(location: string, name: string, rows: Record<string, unknown>[]): Promise<void> {
  const db = await lancedb.connect(path.dirname(location));
  try {
    const t = await db.openTable(path.basename(location, '.lance'));
    try {
      const b = await (await t.branches()).create(name);
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
  const db = await lancedb.connect(path.dirname(location));
  try {
    const t = await db.openTable(path.basename(location, '.lance'));
    try {
      return await t.countRows();
    } finally {
      t.close();
    }
  } finally {
    db.close();
  }
}
