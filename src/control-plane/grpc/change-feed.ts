/**
 * One change-log reader per control-plane process, shared by every Watch stream (DESIGN.md
 * "Control plane": NOTIFY on commit wakes the streams of every replica).
 *
 * Wake-ups come from LISTEN on {@link CHANGE_LOG_CHANNEL} and, as a safety net for
 * notifications lost while the listening connection was down, from a poll every
 * {@link POLL_INTERVAL_MS}. On each wake-up the feed itself reads the new rows ONCE
 * (single-flight) into a window of the last {@link RECENT_WINDOW} changes (at most
 * {@link RECENT_WINDOW_BYTES} of payload), then wakes the
 * subscribers; streams at or near the head are served from that window, so N nodes cost one
 * query per change, not N. A stream further behind than the window reads Postgres directly.
 *
 * Window invariant: it holds every committed change with `windowStart < revision <= head`
 * (revisions become visible in order, change-log/store.ts), so a read "after r" with
 * r >= windowStart is answered exactly from memory.
 */
import type { Sql } from '../db/connect.js';
import type { Logger } from '../../log.js';
import { CHANGE_LOG_CHANNEL, currentRevision, readChangesAfter, READ_MAX_BYTES, type ChangeRow } from '../change-log/store.js';

/** Safety-net poll of the log, in milliseconds. */
export const POLL_INTERVAL_MS = 5_000;
/** Changes kept in memory for streams near the head. */
export const RECENT_WINDOW = 10_000;
/** Most payload bytes (JSON text) the window keeps, however few rows that is. */
export const RECENT_WINDOW_BYTES = 64 * 1024 * 1024;
/** Rows per query when the feed reads new changes. */
export const FEED_PAGE_SIZE = 1_000;

/** The process-wide change feed. */
export interface ChangeFeed {
  /** Highest revision read from the log (0 before the first change). */
  latest(): number;
  /** Up to `limit` changes with revision > `after`, in order (from memory when possible). */
  read(after: number, limit: number): Promise<ChangeRow[]>;
  /** Calls `wake(latest)` after new changes were read; returns the unsubscribe function. */
  subscribe(wake: (latest: number) => void): () => void;
  /** Stops listening and polling. */
  close(): Promise<void>;
}

/** Index of the first row with revision > `after` in ascending `rows` (binary search). */
function firstAfter(rows: readonly ChangeRow[], after: number): number {
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (rows[mid]!.revision <= after) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Starts listening on `sql` (the `postgres` package keeps one dedicated connection for all
 * LISTENs and re-listens after reconnecting; each re-listen triggers a read too).
 * @throws when the first LISTEN or the first head read fails.
 */
export async function startChangeFeed(sql: Sql, log: Logger): Promise<ChangeFeed> {
  const subscribers = new Set<(latest: number) => void>();
  let closed = false;
  let head = await currentRevision(sql);
  let windowStart = head;
  let window: ChangeRow[] = [];
  /** Sum of `bytes` over `window`. */
  let windowBytes = 0;

  // Single-flight reader: a wake-up during a read schedules exactly one more read.
  let pumping: Promise<void> | null = null;
  let again = false;
  const pump = (): void => {
    if (closed) return;
    if (pumping) { again = true; return; }
    pumping = (async () => {
      do {
        again = false;
        for (;;) {
          const rows = await readChangesAfter(sql, head, FEED_PAGE_SIZE);
          if (rows.length === 0) break;
          window.push(...rows);
          head = rows[rows.length - 1]!.revision;
          for (const r of rows) windowBytes += r.bytes;
          // Bounded by rows and by bytes; the newest row always stays.
          let drop = Math.max(0, window.length - RECENT_WINDOW);
          let bytes = windowBytes;
          for (let i = 0; i < drop; i++) bytes -= window[i]!.bytes;
          while (bytes > RECENT_WINDOW_BYTES && drop < window.length - 1) bytes -= window[drop++]!.bytes;
          if (drop > 0) {
            windowStart = window[drop - 1]!.revision;
            window = window.slice(drop);
            windowBytes = bytes;
          }
          for (const wake of subscribers) wake(head);
          if (rows.length < FEED_PAGE_SIZE) break;
        }
      } while (again && !closed);
    })().catch((err: unknown) => {
      if (!closed) log.warn({ err }, 'change-log read failed; retrying on the next wake-up');
    }).finally(() => { pumping = null; });
  };

  const listener = await sql.listen(CHANGE_LOG_CHANNEL, pump, pump);
  const poll = setInterval(pump, POLL_INTERVAL_MS);
  poll.unref();
  pump();

  return {
    latest: () => head,
    async read(after, limit) {
      if (after >= windowStart && after <= head) {
        const i = firstAfter(window, after);
        let j = i;
        let bytes = 0;
        while (j < window.length && j - i < limit && (j === i || bytes < READ_MAX_BYTES)) bytes += window[j++]!.bytes;
        return window.slice(i, j);
      }
      return readChangesAfter(sql, after, limit);
    },
    subscribe(wake) {
      subscribers.add(wake);
      return () => { subscribers.delete(wake); };
    },
    async close() {
      closed = true;
      clearInterval(poll);
      subscribers.clear();
      await listener.unlisten().catch(() => {});
      await pumping;
    },
  };
}
