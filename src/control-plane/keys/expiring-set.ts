/**
 * A bounded set of strings whose members expire: each is kept `ttlMs` after it was last added, at
 * most `capacity` at once (past it the oldest go first, in Map order). Used for the control
 * plane's short memories of key hashes: unknown keys (./unknown-keys.ts) and keys that
 * authenticated lately (../http/auth-failures.ts).
 */
export class ExpiringSet {
  private readonly until = new Map<string, number>();

  /** @param ttlMs how long a member stays, in ms; @param capacity most members kept. */
  constructor(private readonly ttlMs: number, private readonly capacity: number) {}

  /** True when `member` was added within the last `ttlMs` (an expired one is dropped). */
  has(member: string, now: number = Date.now()): boolean {
    const t = this.until.get(member);
    if (t === undefined) return false;
    if (t > now) return true;
    this.until.delete(member);
    return false;
  }

  /** Adds `member` (or renews it) for `ttlMs`. */
  add(member: string, now: number = Date.now()): void {
    this.until.delete(member);
    this.until.set(member, now + this.ttlMs);
    if (this.until.size > this.capacity) this.until.delete(this.until.keys().next().value!);
  }

  /** Removes `member`. */
  forget(member: string): void {
    this.until.delete(member);
  }
}
