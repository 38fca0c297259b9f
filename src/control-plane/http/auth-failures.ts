/**
 * Failed authentications per client address (SWITCHYARD_AUTH_FAILURES_PER_MINUTE): once an
 * address has presented `perMinute` unknown personal API keys within its window, a request from
 * it presenting a key that has not authenticated here recently answers 429 `throttled` until the
 * window ends, before any database lookup. So random keys cost at most `perMinute` lookups per
 * address per minute, and a wrong key still answers 401 below the limit. Keys that authenticated
 * recently ({@link AuthFailureLimiter.vouch}, by hash) are never throttled, so the legitimate
 * clients behind a shared address (a NAT, a proxy, the same host) keep working while one of them
 * guesses; they are still looked up on every request, so a revoked key fails at once. Fixed
 * windows starting at an address' first failure, in process memory (own code: @fastify/rate-limit
 * counts every check, and this must check without counting).
 */
import { ExpiringSet } from '../keys/expiring-set.js';

/** Length of a window, in ms. */
const WINDOW_MS = 60_000;
/** Addresses remembered; past it the oldest windows are dropped. */
const ADDRESSES_REMEMBERED = 100_000;
/** How long a key that authenticated passes the throttle, in ms. */
const VOUCHED_MS = 10 * 60_000;
/** Key hashes remembered as vouched; past it the oldest are dropped. */
const VOUCHED_REMEMBERED = 10_000;

/** Counts failed authentications per address. */
export class AuthFailureLimiter {
  private readonly windows = new Map<string, { failures: number; resetAt: number }>();
  private readonly vouched = new ExpiringSet(VOUCHED_MS, VOUCHED_REMEMBERED);

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

  /** Records that the key with hash `keyHash` authenticated (it passes the throttle for a while). */
  vouch(keyHash: string, now: number = Date.now()): void {
    if (this.perMinute !== 0) this.vouched.add(keyHash, now);
  }

  /** Whether the key with hash `keyHash` authenticated here within the last ten minutes. */
  isVouched(keyHash: string, now: number = Date.now()): boolean {
    return this.vouched.has(keyHash, now);
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
