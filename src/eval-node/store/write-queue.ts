/**
 * The node store's write serialisation (store/lmdb.ts): every write runs after the previous one
 * finished, so tail batches, snapshot steps and the clean-up of superseded generations never
 * overlap. One exception, for bootstrap speed: a write may leave its own commit in flight
 * (lmdb-js queued puts committing on its write thread, apply.ts `stageFresh`) so that the next
 * such write is decoded and encoded meanwhile; any other write first waits for that commit.
 */
export class WriteQueue {
  private tail: Promise<unknown> = Promise.resolve();
  private inFlight: Promise<void> | null = null;

  /**
   * Runs `fn` after every earlier write and any commit left in flight; resolves or rejects with
   * `fn`. A commit left in flight that failed rejects this write instead (the store failed).
   */
  run<T>(fn: () => Promise<T>): Promise<T> {
    return this.chain(async () => {
      await this.settle();
      return fn();
    });
  }

  /**
   * Runs `start` after every earlier write; `start` queues its writes and returns the promise of
   * their commit, which is left in flight. Resolves once the PREVIOUS in-flight commit settled
   * (so at most one is pending); rejects with that commit's error, or at once with what `start`
   * throws synchronously (a failure before anything was queued).
   */
  runOverlapping(start: () => Promise<void>): Promise<void> {
    return this.chain(async () => {
      const committed = start();
      committed.catch(() => { /* surfaced by the next write or by drain */ });
      const previous = this.inFlight;
      this.inFlight = committed;
      if (previous) await previous;
    });
  }

  /** Waits for every queued write and the commit in flight; never rejects (closing). */
  async drain(): Promise<void> {
    await this.tail;
    await this.settle().catch(() => { /* already reported to the writer */ });
  }

  private async settle(): Promise<void> {
    const p = this.inFlight;
    this.inFlight = null;
    if (p) await p;
  }

  private chain<T>(fn: () => Promise<T>): Promise<T> {
    const p = this.tail.then(fn);
    this.tail = p.catch(() => {});
    return p;
  }
}
