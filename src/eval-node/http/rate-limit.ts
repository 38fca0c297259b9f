/**
 * Token buckets keyed by a string (a project id), for PostHog's per-team rate limits on the
 * node's server-side endpoints (issue 10 item 4; research/posthog-management-api.md §2.5, §2.9:
 * the local-evaluation feed and remote_config allow 600 requests per minute per team). A bucket
 * holds `capacity` tokens and refills continuously at `capacity / windowMs`; a request takes one.
 * Memory is bounded: at most `maxKeys` buckets, the oldest dropped first (a dropped bucket
 * starts full, which can only be lenient). Pure apart from the injectable clock.
 */

/** A limiter; `take` answers 0 when allowed, else the milliseconds until a token is available. */
export class TokenBuckets {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  /**
   * @param capacity tokens per window (and the burst); 0 disables the limiter
   * @param windowMs the window, in milliseconds
   */
  constructor(private readonly capacity: number, private readonly windowMs: number,
    private readonly now: () => number = Date.now, private readonly maxKeys = 100_000) {}

  /** Takes a token for `key`: 0 when allowed, else the wait in milliseconds. */
  take(key: string): number {
    if (this.capacity <= 0) return 0;
    const t = this.now();
    const rate = this.capacity / this.windowMs;
    let b = this.buckets.get(key);
    if (b === undefined) {
      if (this.buckets.size >= this.maxKeys) this.buckets.delete(this.buckets.keys().next().value as string);
      b = { tokens: this.capacity, at: t };
      this.buckets.set(key, b);
    } else {
      b.tokens = Math.min(this.capacity, b.tokens + (t - b.at) * rate);
      b.at = t;
    }
    if (b.tokens >= 1) { b.tokens -= 1; return 0; }
    return Math.ceil((1 - b.tokens) / rate);
  }
}
