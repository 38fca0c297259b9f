/** Small async helpers of the Watch handler: a timer promise and a FIFO counting semaphore. */

/** Resolves after `ms` milliseconds without keeping the process alive. */
export const sleep = (ms: number): Promise<void> => new Promise((r) => { setTimeout(r, ms).unref(); });

/** Counting semaphore (FIFO). */
export class Semaphore {
  private readonly waiters: (() => void)[] = [];
  constructor(private free: number) {}
  /** Resolves when a permit is held; pair every call with {@link release}. */
  acquire(): Promise<void> {
    if (this.free > 0) { this.free--; return Promise.resolve(); }
    return new Promise((resolve) => this.waiters.push(resolve));
  }
  /** Returns a permit (to the longest waiter, if any). */
  release(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.free++;
  }
}

