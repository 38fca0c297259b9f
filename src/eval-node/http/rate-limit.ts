/**
 * Token buckets keyed by a string (a project id), for PostHog's per-team rate limits on the
 * node's server-side endpoints (research/posthog-management-api.md §2.5, §2.9:
 * the local-evaluation feed and remote_config allow 600 requests per minute per team). A bucket
 * holds `capacity` tokens and refills continuously at `capacity / windowMs`; a request takes one.
 * Memory is bounded: at most `maxKeys` buckets, the oldest dropped first (a dropped bucket
 * starts full, which can only be lenient). Pure apart from the injectable clock.
 */

/** A limiter; `take` answers 0 when allowed, else the milliseconds until a token is available. */
export class TokenBuckets implements RateLimiter {
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

/** What the feed handlers take a token from: {@link TokenBuckets} or {@link SharedTokenBuckets}. */
export interface RateLimiter {
  /** Takes a token for `key`: 0 when allowed, else the wait in milliseconds. */
  take(key: string): number;
}

/** Slots of a {@link SharedTokenBuckets} table (projects limited at once; more are let through). */
export const SHARED_BUCKET_SLOTS = 4096;
const EMPTY_SLOT = -1;

/**
 * {@link TokenBuckets} over shared memory, for the node's IO threads (http/io-threads.ts): every
 * thread holds the same SharedArrayBuffer, so a project's 600 requests per minute are counted
 * once whichever thread a connection lands on. Keys are project ids (non-negative integers);
 * an open-addressing table of {@link SHARED_BUCKET_SLOTS} slots, each guarded by a spin lock
 * (Atomics.compareExchange; the critical section is a few arithmetic operations). A key that
 * finds no free slot is allowed (lenient, like a dropped bucket in TokenBuckets).
 */
export class SharedTokenBuckets implements RateLimiter {
  private readonly keys: Int32Array;
  private readonly locks: Int32Array;
  private readonly values: Float64Array;

  /**
   * @param buffer from {@link SharedTokenBuckets.allocate}, shared with the other threads
   * @param capacity tokens per window; 0 disables the limiter
   */
  constructor(buffer: SharedArrayBuffer, private readonly capacity: number, private readonly windowMs: number, private readonly now: () => number = Date.now) {
    this.keys = new Int32Array(buffer, 0, SHARED_BUCKET_SLOTS);
    this.locks = new Int32Array(buffer, SHARED_BUCKET_SLOTS * 4, SHARED_BUCKET_SLOTS);
    this.values = new Float64Array(buffer, SHARED_BUCKET_SLOTS * 8, SHARED_BUCKET_SLOTS * 2); // tokens, at
  }

  /** A zeroed table: every slot empty. */
  static allocate(): SharedArrayBuffer {
    const buffer = new SharedArrayBuffer(SHARED_BUCKET_SLOTS * (4 + 4 + 16));
    new Int32Array(buffer, 0, SHARED_BUCKET_SLOTS).fill(EMPTY_SLOT);
    return buffer;
  }

  take(key: string): number {
    if (this.capacity <= 0) return 0;
    const id = Number(key);
    if (!Number.isInteger(id) || id < 0 || id > 0x7fffffff) return 0;
    for (let probe = 0; probe < SHARED_BUCKET_SLOTS; probe++) {
      const slot = (Math.imul(id, 0x9e3779b1) >>> 0) % SHARED_BUCKET_SLOTS + probe;
      const i = slot % SHARED_BUCKET_SLOTS;
      const held = Atomics.load(this.keys, i);
      if (held !== id && held !== EMPTY_SLOT) continue;
      while (Atomics.compareExchange(this.locks, i, 0, 1) !== 0) { /* spin: the holder does a few operations */ }
      try {
        const current = Atomics.load(this.keys, i);
        if (current !== id && current !== EMPTY_SLOT) continue; // taken by another key meanwhile
        const t = this.now();
        const rate = this.capacity / this.windowMs;
        let tokens: number;
        if (current === EMPTY_SLOT) {
          Atomics.store(this.keys, i, id);
          tokens = this.capacity;
        } else {
          tokens = Math.min(this.capacity, this.values[2 * i]! + (t - this.values[2 * i + 1]!) * rate);
        }
        this.values[2 * i + 1] = t;
        if (tokens >= 1) { this.values[2 * i] = tokens - 1; return 0; }
        this.values[2 * i] = tokens;
        return Math.ceil((1 - tokens) / rate);
      } finally {
        Atomics.store(this.locks, i, 0);
      }
    }
    return 0;
  }
}
