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
 * Losing the database (a failover to a promoted replica, db/connect.ts): postgres.js re-issues
 * LISTEN when its listening connection closes, but gives up silently when that attempt fails
 * (the servers were still down). So the feed LISTENs on a connection of its own when given a
 * pool for it (`listenPool`; the control plane does, listen.ts), whose loss it learns at once, and
 * re-subscribes itself: after the LISTEN connection closed or a read failed, it reads every
 * {@link RECOVERY_RETRY_MS} and, on the first read that succeeds, LISTENs afresh and reads again
 * (catching up from the last revision it saw: nothing is missed); and whenever a poll finds
 * changes no notification announced, it LISTENs afresh too.
 *
 * Window invariant: it holds every committed change with `windowStart < revision <= head`
 * (revisions become visible in order, change-log/store.ts), so a read "after r" with
 * r >= windowStart is answered exactly from memory.
 */
import type { Sql } from '../db/connect.js';
import type { Logger } from '../../log.js';
import { listenDedicated, listenShared, type ListenPoolFactory } from './listen.js';
import { CHANGE_LOG_CHANNEL, currentRevision, readChangesAfter, READ_MAX_BYTES, type ChangeRow } from '../change-log/store.js';

/** Safety-net poll of the log, in milliseconds. */
export const POLL_INTERVAL_MS = 5_000;
/** Changes kept in memory for streams near the head. */
export const RECENT_WINDOW = 10_000;
/** Most payload bytes (JSON text) the window keeps, however few rows that is. */
export const RECENT_WINDOW_BYTES = 64 * 1024 * 1024;
/** Retry period of the read while the database cannot be read, in milliseconds. */
export const RECOVERY_RETRY_MS = 250;
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

/** Options of {@link startChangeFeed}. */
export interface ChangeFeedOptions {
  /**
   * Opens a one-connection pool for LISTEN (listen.ts `listenDedicated`), ended and opened again
   * to re-subscribe; without it the feed LISTENs on `sql` (listen.ts `listenShared`).
   */
  listenPool?: ListenPoolFactory;
}

/**
 * Starts listening on `sql` (the `postgres` package keeps one dedicated connection for all
 * LISTENs and re-listens after reconnecting; each re-listen triggers a read too).
 * @throws when the first LISTEN or the first head read fails.
 */
export async function startChangeFeed(sql: Sql, log: Logger, opts: ChangeFeedOptions = {}): Promise<ChangeFeed> {
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
  /** The last read failed (the database is unreachable): LISTEN afresh once a read succeeds. */
  let broken = false;
  let retry: NodeJS.Timeout | null = null;
  /** `fromPoll`: woken by the safety-net poll, so rows it finds were not announced. */
  const pump = (fromPoll = false): void => {
    if (closed) return;
    if (pumping) { again = true; return; }
    pumping = (async () => {
      let found = false;
      do {
        again = false;
        for (;;) {
          const rows = await readChangesAfter(sql, head, FEED_PAGE_SIZE);
          if (rows.length === 0) break;
          found = true;
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
      if (broken) {
        broken = false;
        log.info('change log readable again; listening afresh');
        relisten();
      } else if (fromPoll && found) {
        log.warn('the poll found changes no notification announced; listening afresh');
        relisten();
      }
    })().catch((err: unknown) => {
      if (closed) return;
      if (!broken) log.warn({ err }, 'change-log read failed; retrying');
      broken = true;
      retry ??= setTimeout(() => { retry = null; pump(); }, RECOVERY_RETRY_MS);
    }).finally(() => { pumping = null; });
  };

  const lost = (): void => {
    if (closed) return;
    log.warn('the change-log LISTEN connection closed; reading until the database answers, then listening afresh');
    broken = true;
    retry ??= setTimeout(() => { retry = null; pump(); }, RECOVERY_RETRY_MS);
  };
  const events = { notify: () => pump(), lost };
  const subscription = opts.listenPool
    ? await listenDedicated(opts.listenPool, CHANGE_LOG_CHANNEL, events)
    : await listenShared(sql, CHANGE_LOG_CHANNEL, events);
  /** Drops the subscription and LISTENs again (see the module doc); a failure leaves `broken` set to try again. */
  let relistening: Promise<void> | null = null;
  const relisten = (): void => {
    relistening ??= subscription.renew().then(() => pump(), (err: unknown) => {
      if (closed) return;
      log.warn({ err }, 'LISTEN failed; retrying');
      broken = true;
      retry ??= setTimeout(() => { retry = null; pump(); }, RECOVERY_RETRY_MS);
    }).finally(() => { relistening = null; });
  };
  const poll = setInterval(() => pump(true), POLL_INTERVAL_MS);
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
      if (retry) clearTimeout(retry);
      await relistening;
      subscribers.clear();
      await subscription.close();
      await pumping;
    },
  };
}
