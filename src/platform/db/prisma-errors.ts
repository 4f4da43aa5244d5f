/** Recognises a unique-constraint violation however the driver adapter reports it (P2002 or raw SQLSTATE 23505). */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; meta?: { code?: string; driverAdapterError?: { cause?: { kind?: string } } } };
  return (
    e?.code === 'P2002' ||
    e?.meta?.code === '23505' ||
    e?.meta?.driverAdapterError?.cause?.kind === 'UniqueConstraintViolation' ||
    /23505|unique constraint/i.test(String((err as Error)?.message ?? ''))
  );
}

/** The SQLSTATE of a Postgres error however it arrives (raw pg, Prisma's driver-adapter wrapping, or its message). */
export function sqlState(err: unknown): string | undefined {
  const e = err as {
    code?: unknown;
    meta?: { code?: unknown; driverAdapterError?: { cause?: { originalCode?: unknown; code?: unknown } } };
  };
  const cause = e?.meta?.driverAdapterError?.cause;
  for (const c of [cause?.originalCode, cause?.code, e?.meta?.code, e?.code]) {
    if (typeof c === 'string' && /^[0-9A-Z]{5}$/.test(c)) return c;
  }
  return /Code: `([0-9A-Z]{5})`/.exec(String((err as Error)?.message ?? ''))?.[1];
}

/**
 * A Postgres data exception (SQLSTATE class 22: a value the column's type refuses, e.g. NUL in text (22021) or
 * `\u0000` in jsonb (22P05), a malformed uuid (22P02)). Only a caller's value can cause one — the gateway's own
 * values are well-formed — so it is the caller's bad input (400, code 13), said without the SQL. Returns the
 * sentence for the caller, or undefined when `err` is not one.
 */
export function dataExceptionMessage(err: unknown): string | undefined {
  const state = sqlState(err);
  if (!state?.startsWith('22')) return undefined;
  switch (state) {
    case '22021':
      return 'the request contains text the catalog cannot store (a NUL character or invalid UTF-8)';
    case '22P05':
      return 'the request contains text the catalog cannot store (a NUL character, \\u0000)';
    case '22001':
      return 'a value in the request is too long';
    case '22003':
      return 'a number in the request is out of range';
    default: {
      const cause = (err as { meta?: { driverAdapterError?: { cause?: { originalMessage?: unknown } } } })?.meta?.driverAdapterError?.cause;
      const said = typeof cause?.originalMessage === 'string' ? `: ${cause.originalMessage.slice(0, 200)}` : '';
      return `a value in the request is not valid (SQLSTATE ${state}${said})`;
    }
  }
}
