/**
 * A short memory of presented personal API keys that matched no active key, so a client
 * repeating a wrong key (a stale key in a polling SDK, a scan) costs one database lookup per
 * {@link UNKNOWN_KEY_TTL_MS}, not one per request. Keys are remembered by their hash, never their
 * value. Creating a key forgets its hash at once (./store.ts), so a key created after a miss works
 * on its next request; a key made known another way (another control plane, a direct insert)
 * works once the entry expires. Revocation is unaffected: only misses are remembered.
 */

/** How long a miss is remembered, in ms. */
export const UNKNOWN_KEY_TTL_MS = 5_000;
/** Most misses remembered; past it the oldest are dropped (a scan of random keys evicts itself). */
export const UNKNOWN_KEYS_REMEMBERED = 10_000;

/** Hashes of unknown keys with the instant (epoch ms) each is forgotten; oldest first (Map order). */
export class UnknownKeys {
  private readonly until = new Map<string, number>();

  constructor(private readonly ttlMs = UNKNOWN_KEY_TTL_MS, private readonly capacity = UNKNOWN_KEYS_REMEMBERED) {}

  /** True when `hash` missed within the last `ttlMs`. */
  has(hash: string, now: number = Date.now()): boolean {
    const t = this.until.get(hash);
    if (t === undefined) return false;
    if (t > now) return true;
    this.until.delete(hash);
    return false;
  }

  /** Remembers a miss of `hash`. */
  add(hash: string, now: number = Date.now()): void {
    this.until.delete(hash);
    this.until.set(hash, now + this.ttlMs);
    if (this.until.size > this.capacity) this.until.delete(this.until.keys().next().value!);
  }

  /** Forgets `hash` (its key was just created). */
  forget(hash: string): void {
    this.until.delete(hash);
  }
}

/** The process' memory of unknown keys, shared by every authentication of the control plane. */
export const unknownKeys = new UnknownKeys();
