/** Bounded polling for integration tests: wait for a condition instead of asserting on timing. */

/**
 * Polls `check` every `intervalMs` until it returns a truthy value (returned), or throws after
 * `timeoutMs` naming `what` and the last value seen.
 */
export async function waitFor<T>(what: string, check: () => T | Promise<T>, opts: { timeoutMs?: number; intervalMs?: number } = {}): Promise<NonNullable<T>> {
  const timeoutMs = opts.timeoutMs ?? 20_000;
  const intervalMs = opts.intervalMs ?? 20;
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  for (;;) {
    last = await check();
    if (last) return last as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${JSON.stringify(last)})`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
