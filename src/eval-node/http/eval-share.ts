/**
 * Each project's share of an IO thread's evaluation time, applied only under contention, so one
 * project whose `/flags` requests run to the evaluation budget (hundreds of backtracking regex
 * conditions: up to SWITCHYARD_EVAL_BUDGET_MS each) cannot hold the thread that serves every
 * other project. Requests queue on a thread's sockets in arrival order; without a share, another
 * project's request waits behind every one of the heavy project's requests ahead of it.
 *
 * Time is counted in windows of {@link WINDOW_MS}. A project is refused for the rest of a window
 * (the handler answers 429 `throttled` with `Retry-After`, as PostHog's flags service answers a
 * rate-limited token) when all of these hold in it:
 * - it has evaluated for at least `sharePercent` % of the window;
 * - another project asked this thread for flags in the last {@link RECENT_MS} (a project alone is
 *   never refused: nobody waits behind it). Recent, not only in this window: requests are served
 *   in arrival order, so the other project's next request may still be queued behind the heavy
 *   one's;
 * - the thread spent at least {@link BUSY_FRACTION} of the window so far evaluating (a thread
 *   with time to spare keeps serving everyone).
 * The check and the counting cost a map lookup and two clock reads per request. One instance per
 * IO thread (each thread is its own event loop); pure apart from the injectable clock.
 */

/** Length of a counting window, in milliseconds: short, so a refused project is back soon and others wait at most about one share of it. */
export const WINDOW_MS = 250;
/** Fraction of a window's elapsed time the thread must have spent evaluating for shares to apply. */
export const BUSY_FRACTION = 0.8;
/** How recently another project must have asked for a project to be held to its share, in milliseconds. */
export const RECENT_MS = 1_000;

/** The last time a project asked. */
interface Ask { project: number; at: number }

/** See the module doc. */
export class EvaluationShare {
  private windowStart: number;
  /** Milliseconds spent evaluating in this window, all projects. */
  private busyMs = 0;
  /** Milliseconds each project spent evaluating in this window. */
  private readonly used = new Map<number, number>();
  /** The latest ask, and the latest of a different project before it. */
  private latest: Ask | null = null;
  private previous: Ask | null = null;
  private readonly limitMs: number;

  /**
   * @param sharePercent the share of a window one project may use under contention, 1–100
   *   (100: never refused)
   * @param now clock in milliseconds (tests inject one)
   */
  constructor(sharePercent: number, private readonly now: () => number = () => performance.now()) {
    this.limitMs = sharePercent >= 100 ? Infinity : (WINDOW_MS * sharePercent) / 100;
    this.windowStart = now();
  }

  /**
   * Whether `projectId` may evaluate now: 0 when it may, else the milliseconds until the window
   * ends. Counts the project as asking now either way.
   */
  admit(projectId: number): number {
    const t = this.roll();
    const other = this.latest?.project !== projectId ? this.latest : this.previous;
    if (this.latest?.project === projectId) this.latest.at = t;
    else { this.previous = this.latest; this.latest = { project: projectId, at: t }; }
    const mine = this.used.get(projectId) ?? 0;
    if (mine < this.limitMs || other === null || other.at < t - RECENT_MS || this.busyMs < (t - this.windowStart) * BUSY_FRACTION) return 0;
    return Math.max(1, this.windowStart + WINDOW_MS - t);
  }

  /** Counts `ms` milliseconds of evaluation for `projectId` (after {@link admit} let it run). */
  record(projectId: number, ms: number): void {
    this.roll();
    this.busyMs += ms;
    this.used.set(projectId, (this.used.get(projectId) ?? 0) + ms);
  }

  /** Starts a new window when the current one is over; returns the time. */
  private roll(): number {
    const t = this.now();
    if (t - this.windowStart >= WINDOW_MS) {
      this.windowStart = t;
      this.busyMs = 0;
      this.used.clear();
    }
    return t;
  }
}
