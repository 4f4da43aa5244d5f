import { parentPort } from 'node:worker_threads';
import { Message } from 'apache-arrow/ipc/metadata/message';

/**
 * The worker of arrow-schema-guard.ts: decodes schema messages with apache-arrow under the worker's heap limit and
 * answers whether that worked. It never runs in the gateway's own thread.
 */
parentPort?.on('message', (meta: Uint8Array) => {
  try {
    const header = Message.decode(meta).header() as { fields?: unknown[] } | null;
    parentPort!.postMessage({ ok: true, fields: header?.fields?.length ?? 0 });
  } catch (err) {
    parentPort!.postMessage({ ok: false, error: (err as Error).message });
  }
});
// Loaded: the guard's time limit starts with the first job, not with loading apache-arrow.
parentPort?.postMessage({ ready: true });
