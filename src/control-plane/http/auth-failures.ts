/**
 * Failed authentications per client address (SWITCHYARD_AUTH_FAILURES_PER_MINUTE): once an
 * address has presented `perMinute` unknown personal API keys within its window, every request
 * from it that presents a key answers 429 `throttled` until the window ends, before any database
 * lookup. So random keys cost at most `perMinute` lookups per address per minute, and a wrong key
 * still answers 401 below the limit. Fixed windows starting at an address' first failure, in
 * process memory (own code: @fastify/rate-limit counts every check, and this must check without counting).
 */

/** Length of a window, in ms. */
const WINDOW_MS = 60_000;
/** Addresses remembered; past it the oldest windows are dropped. */
const ADDRESSES_REMEMBERED = 100_000;

/** Counts failed authentications per address. */
export class AuthFailureLimiter {
  private readonly windows = new Map<string, { failures: number; resetAt: number }>();

  /** @param perMinute failures allowed per address per minute; 0: no limit. */
  constructor(private readonly perMinute: number) {}

  /** Milliseconds until `address` may present a key again; 0 when it may now. */
  blockedFor(address: string, now: number = Date.now()): number {
    if (this.perMinute === 0) return 0;
    const w = this.windows.get(address);
    if (!w) return 0;
    if (w.resetAt <= now) { this.windows.delete(address); return 0; }
    return w.failures >= this.perMinute ? w.resetAt - now : 0;
  }

  /** Records one failed authentication of `address`. */
  fail(address: string, now: number = Date.now()): void {
    if (this.perMinute === 0) return;
    const w = this.windows.get(address);
    if (w && w.resetAt > now) { w.failures++; return; }
    this.windows.delete(address);
    this.windows.set(address, { failures: 1, resetAt: now + WINDOW_MS });
    if (this.windows.size > ADDRESSES_REMEMBERED) this.windows.delete(this.windows.keys().next().value!);
  }
}
