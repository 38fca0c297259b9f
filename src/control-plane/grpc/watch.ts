/**
 * The `Watch` server-streaming handler (proto/switchyard.proto; DESIGN.md "Control plane").
 *
 * Per call: check the cluster token → decide between tail and snapshot → (snapshot between
 * SnapshotBegin/SnapshotEnd) → tail the change log after the last revision sent, woken by the
 * process-wide {@link ChangeFeed}, with a Heartbeat after catching up and every
 * {@link HEARTBEAT_INTERVAL_MS} → until the client goes away or the server closes.
 *
 * Tail reads go through the process-wide feed (change-feed.ts): from its in-memory window near
 * the head, from Postgres further back.
 *
 * A snapshot is sent when (see {@link snapshotReason}):
 * - `from_revision` is 0 (a new node, or one whose data dir was wiped);
 * - `from_revision` is above the log head (the node followed another database);
 * - the log no longer holds every revision after `from_revision` (a retention job deleted a
 *   prefix: min(revision) > from + 1);
 * - the node is more than `max(maxTailChanges, tailPerSnapshotRow × estimated snapshot rows)`
 *   revisions behind (defaults {@link MAX_TAIL_CHANGES}, {@link TAIL_PER_SNAPSHOT_ROW}; the row
 *   estimate is Postgres' `reltuples` of the snapshot tables, see snapshot.ts). Replaying a
 *   change costs about what applying one snapshot entity costs, so a node replays the tail
 *   while that is shorter than the snapshot — with persons in the log, a node down a few minutes
 *   during heavy capture must not re-download every person —
 *   and past that one consistent snapshot is cheaper than replaying every intermediate state
 *   (the node's staged swap means it serves its old state meanwhile).
 *
 * Changes go out in ChangeBatch messages of up to {@link BATCH_MAX_CHANGES} changes /
 * {@link BATCH_MAX_BYTES} (a lone tail change as a plain Change): per-message cost dominates
 * otherwise.
 *
 * Backpressure: when `call.write` returns false the handler waits for `drain`, so a slow node
 * holds at most one HTTP/2 window of events in memory here.
 */
import * as grpc from '@grpc/grpc-js';
import type { Sql } from '../db/connect.js';
import type { Logger } from '../../log.js';
import type { ChangeRow } from '../change-log/store.js';
import { formatRevision, parseRevision, type ChangeMessage, type WatchEventOut, type WatchRequest } from '../../grpc/messages.js';
import { hasClusterToken, unauthenticated } from './auth.js';
import type { ChangeFeed } from './change-feed.js';
import { estimateSnapshotRows, streamSnapshot, type SnapshotEntity } from './snapshot.js';
import { changeMessage, tailMessage } from './encode.js';
import { Semaphore, sleep } from './semaphore.js';

/** A node further behind than this many revisions gets a snapshot instead of the tail. */
export const MAX_TAIL_CHANGES = 10_000;
/** Tail replay allowed per estimated snapshot row (1: replay while no longer than the snapshot). */
export const TAIL_PER_SNAPSHOT_ROW = 1;
/** Changes read from the log per query while tailing. */
export const TAIL_PAGE_SIZE = 1_000;
/** Most changes per ChangeBatch message. */
export const BATCH_MAX_CHANGES = 500;
/** A ChangeBatch is closed once its payloads reach this many bytes (clients accept 64 MiB messages). */
export const BATCH_MAX_BYTES = 1024 * 1024;
/** Snapshots streamed at once per control-plane process (each holds a pooled connection). */
export const MAX_CONCURRENT_SNAPSHOTS = 4;
/** Heartbeat period while a stream is idle, in milliseconds (nodes time out at ~3×). */
export const HEARTBEAT_INTERVAL_MS = 10_000;

/** Why a stream starts with a snapshot, or null to tail from `from_revision`. */
export type SnapshotReason = 'new_node' | 'ahead_of_log' | 'log_pruned' | 'too_far_behind' | null;

/** Tunables and test seams of {@link createWatchHandler}. */
export interface WatchOptions {
  /** Snapshot threshold in revisions (default {@link MAX_TAIL_CHANGES}). */
  maxTailChanges: number;
  /** Size-aware threshold factor (default {@link TAIL_PER_SNAPSHOT_ROW}; 0 = fixed threshold). */
  tailPerSnapshotRow: number;
  /** Heartbeat period in ms (default {@link HEARTBEAT_INTERVAL_MS}). */
  heartbeatIntervalMs: number;
  /** Most changes per ChangeBatch (default {@link BATCH_MAX_CHANGES}). */
  batchMaxChanges: number;
  /** Snapshots streamed at once by this process (default {@link MAX_CONCURRENT_SNAPSHOTS}). */
  maxConcurrentSnapshots: number;
  /**
   * Test seam: awaited after SnapshotBegin (`sent` = 0) and after each batch of snapshot
   * entities written (`sent` = entities so far). Lets a test stop the server mid-snapshot.
   */
  afterSnapshotEvent?: (sent: number) => Promise<void>;
}

/**
 * Decides whether a node at `from` needs a snapshot, given the log's `head` (max revision,
 * 0 when empty) and `oldest` retained revision (null when empty).
 */
export function snapshotReason(from: number, head: number, oldest: number | null, maxTailChanges: number): SnapshotReason {
  if (from === 0) return 'new_node';
  if (from > head) return 'ahead_of_log';
  if (oldest !== null && oldest > from + 1) return 'log_pruned';
  if (head - from > maxTailChanges) return 'too_far_behind';
  return null;
}

/** The live streams of one server, so that closing it can end them. */
export interface WatchRegistry {
  /** Ends every stream with UNAVAILABLE (nodes reconnect elsewhere or later). */
  closeAll(): void;
  /** Number of open streams. */
  size(): number;
}

type WatchCall = grpc.ServerWritableStream<WatchRequest, WatchEventOut>;

/**
 * Builds the Watch handler and the registry of its streams.
 * Statuses: UNAUTHENTICATED (token), INVALID_ARGUMENT (bad from_revision), UNAVAILABLE
 * (database error or server closing).
 */
export function createWatchHandler(deps: { sql: Sql; feed: ChangeFeed; log: Logger; clusterToken: string; options?: Partial<WatchOptions> }):
  { handler: grpc.handleServerStreamingCall<WatchRequest, WatchEventOut>; registry: WatchRegistry } {
  const { sql, feed, log, clusterToken } = deps;
  const opts: WatchOptions = { maxTailChanges: MAX_TAIL_CHANGES, tailPerSnapshotRow: TAIL_PER_SNAPSHOT_ROW, heartbeatIntervalMs: HEARTBEAT_INTERVAL_MS, batchMaxChanges: BATCH_MAX_CHANGES, maxConcurrentSnapshots: MAX_CONCURRENT_SNAPSHOTS, ...deps.options };
  const live = new Set<{ stop(status: Partial<grpc.StatusObject> | null): void }>();
  const snapshots = new Semaphore(opts.maxConcurrentSnapshots);

  const handler = (call: WatchCall): void => {
    if (!hasClusterToken(call.metadata, clusterToken)) {
      call.emit('error', unauthenticated());
      return;
    }
    let from: number;
    try {
      from = parseRevision(call.request.from_revision);
    } catch (err) {
      call.emit('error', { code: grpc.status.INVALID_ARGUMENT, details: (err as Error).message });
      return;
    }
    const nodeId = call.request.node_id || call.getPeer();
    const slog = log.child({ node_id: nodeId });

    let done = false;
    let wakePending = true;
    let wakeUp: (() => void) | null = null;
    const wake = (): void => { wakePending = true; const w = wakeUp; wakeUp = null; w?.(); };
    const unsubscribe = feed.subscribe(wake);
    let heartbeatDue = false;
    const heartbeat = setInterval(() => { heartbeatDue = true; wake(); }, opts.heartbeatIntervalMs);
    const stopWaiters = new Set<() => void>();

    const entry = {
      stop(status: Partial<grpc.StatusObject> | null): void {
        if (done) return;
        done = true;
        clearInterval(heartbeat);
        unsubscribe();
        live.delete(entry);
        wake();
        for (const w of [...stopWaiters]) w();
        if (status) call.emit('error', status);
      },
    };
    live.add(entry);
    call.on('cancelled', () => entry.stop(null));
    call.on('error', () => entry.stop(null));

    /** Writes one event, waiting for `drain` when the HTTP/2 buffer is full (or for the stream to stop). */
    const send = async (ev: WatchEventOut): Promise<void> => {
      if (done) return;
      if (call.write(ev)) return;
      await new Promise<void>((resolve) => {
        const finish = (): void => { call.off('drain', finish); stopWaiters.delete(finish); resolve(); };
        call.once('drain', finish);
        stopWaiters.add(finish);
      });
    };

    /** Streams a snapshot between begin/end markers; returns its revision. */
    const sendSnapshot = async (reason: SnapshotReason): Promise<number> => {
      let sent = 0;
      let snapshotRevision = 0;
      let batch: ChangeMessage[] = [];
      let batchBytes = 0;
      const flush = async (): Promise<void> => {
        if (batch.length === 0) return;
        const out = batch;
        batch = [];
        batchBytes = 0;
        await send({ changes: { changes: out } });
        sent += out.length;
        if (opts.afterSnapshotEvent) await opts.afterSnapshotEvent(sent);
      };
      const revision = await streamSnapshot(sql, {
        begin: async (rev) => {
          snapshotRevision = rev;
          slog.info({ from_revision: from, revision: rev, reason }, 'watch: sending snapshot');
          await send({ snapshot_begin: { revision: formatRevision(rev) } });
          if (opts.afterSnapshotEvent) await opts.afterSnapshotEvent(0);
        },
        entity: async (e: SnapshotEntity) => {
          if (done) throw new StreamStopped();
          // Snapshot entities carry the snapshot's revision; the node records it on SnapshotEnd.
          const m = changeMessage(snapshotRevision, e.kind, e.entityId, e.projectId, 'upsert', e.payload);
          batch.push(m);
          batchBytes += m.payload.length;
          if (batch.length >= opts.batchMaxChanges || batchBytes >= BATCH_MAX_BYTES) await flush();
        },
      });
      await flush();
      await send({ snapshot_end: { revision: formatRevision(revision) } });
      slog.info({ revision, entities: sent }, 'watch: snapshot sent');
      return revision;
    };

    const run = async (): Promise<void> => {
      const [bounds] = await sql<{ head: number; oldest: number | null }[]>`
        SELECT coalesce(max(revision), 0)::bigint AS head, min(revision) AS oldest FROM change_log`;
      const head = Number(bounds!.head);
      const oldest = bounds!.oldest === null ? null : Number(bounds!.oldest);
      let threshold = opts.maxTailChanges;
      if (head - from > threshold && opts.tailPerSnapshotRow > 0) {
        threshold = Math.max(threshold, Math.floor(opts.tailPerSnapshotRow * await estimateSnapshotRows(sql)));
      }
      const reason = snapshotReason(from, head, oldest, threshold);
      let cursor = from;
      if (reason !== null) {
        // Each snapshot holds a pooled connection in a long read transaction: at most
        // opts.maxConcurrentSnapshots per process, so a fleet restart cannot starve the API.
        // Waiting nodes get heartbeats, so their idle timeout does not fire.
        const acquired = snapshots.acquire();
        while (!(await Promise.race([acquired.then(() => true), sleep(opts.heartbeatIntervalMs).then(() => false)]))) {
          await send({ heartbeat: { revision: formatRevision(feed.latest()) } });
        }
        try {
          if (done) return;
          cursor = await sendSnapshot(reason);
        } finally {
          snapshots.release();
        }
      } else {
        slog.info({ from_revision: from, head }, 'watch: resuming tail');
      }
      let caughtUp = false;
      while (!done) {
        if (wakePending) {
          wakePending = false;
          const rows: ChangeRow[] = await feed.read(cursor, TAIL_PAGE_SIZE);
          for (let i = 0; i < rows.length && !done;) {
            const out: ChangeMessage[] = [];
            let bytes = 0;
            while (i < rows.length && out.length < opts.batchMaxChanges && bytes < BATCH_MAX_BYTES) {
              const m = tailMessage(rows[i++]!);
              out.push(m);
              bytes += m.payload.length;
            }
            await send(out.length === 1 ? { change: out[0]! } : { changes: { changes: out } });
            cursor = Number(out[out.length - 1]!.revision);
          }
          if (done) return;
          if (rows.length === TAIL_PAGE_SIZE) { wakePending = true; continue; }
          if (!caughtUp) { caughtUp = true; heartbeatDue = true; }
        }
        if (heartbeatDue && !done) {
          heartbeatDue = false;
          await send({ heartbeat: { revision: formatRevision(Math.max(cursor, feed.latest())) } });
        }
        if (!wakePending && !heartbeatDue && !done) await new Promise<void>((resolve) => { wakeUp = resolve; });
      }
    };

    run().then(
      () => entry.stop(null),
      (err: unknown) => {
        if (done || err instanceof StreamStopped) { entry.stop(null); return; }
        slog.warn({ err }, 'watch stream failed');
        entry.stop({ code: grpc.status.UNAVAILABLE, details: 'change stream failed; reconnect' });
      },
    );
  };

  return {
    handler,
    registry: {
      closeAll() { for (const s of [...live]) s.stop({ code: grpc.status.UNAVAILABLE, details: 'control plane shutting down' }); },
      size: () => live.size,
    },
  };
}

/** Internal: thrown into the snapshot transaction to abort it when the client went away. */
class StreamStopped extends Error {}
