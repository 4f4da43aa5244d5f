/** Polls `fn` until it returns a truthy value (bounded attempts; not a timing assertion). */
export async function eventually<T>(fn: () => Promise<T | undefined | false>, attempts = 100, delayMs = 50): Promise<T> {
  for (let i = 0; i < attempts; i++) {
    const v = await fn();
    if (v) return v;
    await new Promise((r) => setTimeout(r, delayMs));
  }
  throw new Error('condition not met');
}
