import * as arrow from 'apache-arrow';
import type * as lancedb from '@lancedb/lancedb';
import { IpcMessage, splitStream } from './arrow-ipc-message';

/**
 * Every row of a table handle (at whatever version it is checked out at) as IPC messages, batch stream by batch
 * stream, without decoding them: the engine hands each batch out as IPC stream bytes. The first stream's schema
 * message comes first; a table without rows yields its schema alone. `columns` narrows the rows to those columns.
 */
export async function* engineBatches(table: lancedb.Table, columns?: string[]): AsyncGenerator<IpcMessage[]> {
  const q = columns ? table.query().select(columns) : table.query();
  const exec = (q as unknown as { nativeExecute?: () => Promise<{ next(): Promise<Buffer | null> }> }).nativeExecute;
  if (typeof exec !== 'function') throw new Error('@lancedb/lancedb: query has no native batch iterator');
  const it = await exec.call(q);
  let any = false;
  for (let b = await it.next(); b; b = await it.next()) {
    any = true;
    yield splitStream(b);
  }
  if (!any) yield splitStream(Buffer.from(arrow.tableToIPC(new arrow.Table(await q.outputSchema()), 'stream')));
}
