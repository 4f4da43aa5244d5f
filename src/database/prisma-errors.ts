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
