/**
 * One change-log listener per control-plane process, fanned out to every Watch stream
 * (DESIGN.md "Control plane": NOTIFY on commit wakes the streams of every replica).
 *
 * Wake-ups come from LISTEN on {@link CHANGE_LOG_CHANNEL} (payload: highest revision committed)
 * and, as a safety net for notifications lost while the listening connection was down, from a
 * poll of `max(revision)` every {@link POLL_INTERVAL_MS}. Subscribers are only told "there may
 * be more"; each stream then reads the log after its own cursor, so a lost or coalesced wake-up
 * costs latency, never a change.
 */
import type { Sql } from '../db/connect.js';
import type { Logger } from '../../log.js';
import { CHANGE_LOG_CHANNEL, currentRevision } from '../change-log/store.js';

/** Safety-net poll of the log head, in milliseconds. */
export const POLL_INTERVAL_MS = 5_000;

/** The process-wide change feed. */
export interface ChangeFeed {
  /** Highest committed revision seen (NOTIFY payloads and polls); 0 before the first. */
  latest(): number;
  /** Calls `wake(latest)` whenever the log may have grown; returns the unsubscribe function. */
  subscribe(wake: (latest: number) => void): () => void;
  /** Stops listening and polling. */
  close(): Promise<void>;
}

/**
 * Starts listening on `sql` (the `postgres` package keeps one dedicated connection for all
 * LISTENs and re-listens after reconnecting; each re-listen wakes every subscriber too).
 * @throws when the first LISTEN or the first head read fails.
 */
export async function startChangeFeed(sql: Sql, log: Logger): Promise<ChangeFeed> {
  const subscribers = new Set<(latest: number) => void>();
  let latest = 0;
  let closed = false;

  const advance = (rev: number): void => {
    if (rev > latest) latest = rev;
    for (const wake of subscribers) wake(latest);
  };

  const listener = await sql.listen(
    CHANGE_LOG_CHANNEL,
    (payload) => {
      const rev = Number(payload);
      advance(Number.isSafeInteger(rev) ? rev : latest);
    },
    // (Re)listen: notifications may have been missed while disconnected.
    () => { void currentRevision(sql).then(advance, () => {}); },
  );
  latest = Math.max(latest, await currentRevision(sql));

  const poll = setInterval(() => {
    currentRevision(sql).then((rev) => { if (rev > latest) advance(rev); }, (err: unknown) => {
      if (!closed) log.warn({ err }, 'change-log poll failed');
    });
  }, POLL_INTERVAL_MS);
  poll.unref();

  return {
    latest: () => latest,
    subscribe(wake) {
      subscribers.add(wake);
      return () => { subscribers.delete(wake); };
    },
    async close() {
      closed = true;
      clearInterval(poll);
      subscribers.clear();
      await listener.unlisten().catch(() => {});
    },
  };
}
