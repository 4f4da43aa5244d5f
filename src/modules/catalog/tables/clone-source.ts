import { sqlState } from '../../../platform/db/prisma-errors';
import { ApiError, Errors } from '../../../platform/http/errors';

/**
 * A shallow clone reads its source's data files in place, so the catalog keeps the source while a clone refers to
 * it (tables.clone_source_id, NO ACTION). A statement that removes such a source, or registers a clone of a source
 * that went meanwhile, breaks that reference: this says so in the spec's terms (409 code 19 / 404 code 4).
 */
export function cloneSourceError(err: unknown): ApiError | undefined {
  if (sqlState(err) !== '23503') return undefined;
  const e = err as { message?: unknown; meta?: unknown };
  const text = `${String(e?.message ?? '')} ${JSON.stringify(e?.meta ?? {})}`;
  if (!text.includes('tables_clone_source_id_fkey')) return undefined;
  return /still referenced|update or delete on table/i.test(text)
    ? Errors.invalidTableState(
        "a shallow clone reads this table's data files: drop or deregister the clone first (or make it a deep clone, is_shallow=false)",
      )
    : Errors.tableNotFound('the table to clone was dropped meanwhile');
}

/** Runs a statement that removes or registers table rows, answering a broken clone reference as cloneSourceError does. */
export async function keepingCloneSources<T>(statement: PromiseLike<T>): Promise<T> {
  try {
    return await statement;
  } catch (err) {
    throw cloneSourceError(err) ?? err;
  }
}
