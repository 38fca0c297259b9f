/**
 * The `Watch` server-streaming handler (proto/switchyard.proto; DESIGN.md "Control plane").
 *
 * Per call: check the cluster token → decide between tail, resumed snapshot and snapshot →
 * (snapshot: SnapshotBegin(R0), paged SnapshotChunks, the changes after R0 up to the head R1,
 * SnapshotEnd(R1); snapshot.ts) → tail the change log after the last revision sent, woken by the
 * process-wide {@link ChangeFeed}, with a Heartbeat after catching up and every
 * {@link HEARTBEAT_INTERVAL_MS} → until the client goes away or the server closes.
 *
 * Resuming: a node that lost its stream mid-snapshot sends `resume` = {R0, the
 * cursor of the last chunk it stored}. While the log still holds every revision after R0 and R0
 * is not above the head, the snapshot continues from that cursor (SnapshotBegin.resumed); else
 * the node gets what a node at `from_revision` gets (a fresh snapshot or the tail), and drops
 * its staged part.
 *
 * Tail reads go through the process-wide feed (change-feed.ts): from its in-memory window near
 * the head, from Postgres further back.
 *
 * A snapshot is sent when (see {@link snapshotReason}):
 * - `from_revision` is 0 (a new node, or one whose data dir was wiped);
 * - `from_revision` is above the log head (the node followed another database);
 * - the log may no longer hold every entity's newest entry after `from_revision` (pruning passed
 *   it: the horizon of change-log/retention.ts, {@link logBounds});
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
import { formatRevision, parseRevision, type ChangeMessage, type WatchEventOut, type WatchRequest } from '../../contract/messages.js';
import { hasClusterToken, unauthenticated } from './auth.js';
import type { ChangeFeed } from './change-feed.js';
import { decodeCursor, estimateSnapshotRows, streamSnapshotPages, CHUNK_MAX_ENTITIES } from './snapshot.js';
import type { SnapshotCursor } from '../change-log/snapshot-source.js';
import { currentRevision, readChangesAfter } from '../change-log/store.js';
import { tailMessage } from './encode.js';
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
/**
 * Heartbeat period while a stream is idle, in milliseconds. Short, so that a node's
 * `switchyard_node_sync_last_event_age_seconds` tells a quiet control plane (age ≤ this) from a
 * link that stopped carrying anything (age growing) within seconds; one small message per stream.
 */
export const HEARTBEAT_INTERVAL_MS = 2_000;

/**
 * The log's head (0 when empty) and the oldest revision after which it holds every entity's
 * newest entry: one past the pruning horizon (change-log/retention.ts; compaction deletes
 * superseded entries anywhere, so min(revision) would not tell); null before any pruning.
 */
export async function logBounds(sql: Sql): Promise<{ head: number; oldest: number | null }> {
  const [b] = await sql<{ head: number; pruned: number | null }[]>`
    SELECT (SELECT coalesce(max(revision), 0) FROM change_log)::bigint AS head,
      (SELECT pruned_through FROM change_log_horizon)::bigint AS pruned`;
  const pruned = b!.pruned === null ? 0 : Number(b!.pruned);
  return { head: Number(b!.head), oldest: pruned === 0 ? null : pruned + 1 };
}

/** Why a stream starts with a snapshot, or null to tail from `from_revision`. */
export type SnapshotReason = 'new_node' | 'ahead_of_log' | 'log_pruned' | 'too_far_behind' | null;

/**
 * True when a snapshot begun at `revision` can continue: not above the log's `head`, and the log
 * still holds every revision after it (`oldest` retained revision, null when empty).
 */
export function canResume(revision: number, head: number, oldest: number | null): boolean {
  return revision <= head && (oldest === null || oldest <= revision + 1);
}

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
  /** Most entities per SnapshotChunk (default snapshot.ts CHUNK_MAX_ENTITIES). */
  chunkMaxEntities: number;
  /** Snapshots streamed at once by this process (default {@link MAX_CONCURRENT_SNAPSHOTS}). */
  maxConcurrentSnapshots: number;
  /**
   * Test seam: awaited after SnapshotBegin (`sent` = 0) and after each SnapshotChunk written
   * (`sent` = entities so far in this stream). Lets a test stop the server mid-snapshot.
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
  const opts: WatchOptions = {
    maxTailChanges: MAX_TAIL_CHANGES, tailPerSnapshotRow: TAIL_PER_SNAPSHOT_ROW, heartbeatIntervalMs: HEARTBEAT_INTERVAL_MS,
    batchMaxChanges: BATCH_MAX_CHANGES, chunkMaxEntities: CHUNK_MAX_ENTITIES, maxConcurrentSnapshots: MAX_CONCURRENT_SNAPSHOTS, ...deps.options,
  };
  const live = new Set<{ stop(status: Partial<grpc.StatusObject> | null): void }>();
  const snapshots = new Semaphore(opts.maxConcurrentSnapshots);

  const handler = (call: WatchCall): void => {
    if (!hasClusterToken(call.metadata, clusterToken)) {
      call.emit('error', unauthenticated());
      return;
    }
    let from: number;
    let resume: { revision: number; cursor: SnapshotCursor } | null = null;
    try {
      from = parseRevision(call.request.from_revision);
      const r = call.request.resume;
      if (r) {
        const cursor = decodeCursor(r.cursor);
        // A cursor this server cannot read is not an error: the node just starts over.
        if (cursor !== null) resume = { revision: parseRevision(r.revision), cursor };
      }
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

    /** Sends `rows` (ascending revisions) as Change / ChangeBatch messages; returns the last revision sent. */
    const sendRows = async (rows: readonly ChangeRow[], cursor: number): Promise<number> => {
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
      return cursor;
    };

    /**
     * Streams a snapshot from R0 = `start.revision` (module doc): begin, the pages from
     * `start.cursor`, the changes after R0 up to the head read once the pages are done, end.
     * Returns the revision it ends at.
     */
    const sendSnapshot = async (start: { revision: number; cursor: SnapshotCursor; resumed: boolean }, reason: SnapshotReason | 'resume'): Promise<number> => {
      slog.info({ from_revision: from, revision: start.revision, reason, cursor_source: start.cursor.source }, 'watch: sending snapshot');
      await send({ snapshot_begin: { revision: formatRevision(start.revision), resumed: start.resumed } });
      if (opts.afterSnapshotEvent) await opts.afterSnapshotEvent(0);
      let sent = 0;
      await streamSnapshotPages(sql, start.cursor, async (chunk) => {
        if (done) throw new StreamStopped();
        await send({ snapshot_chunk: { entities: chunk.entities, cursor: chunk.cursor } });
        sent += chunk.count;
        if (opts.afterSnapshotEvent) await opts.afterSnapshotEvent(sent);
      }, { chunkMaxEntities: opts.chunkMaxEntities });
      // Replay: every change after R0 up to the head as it is now (the pages may show any state
      // up to it), so the staged state is exactly the state at the last revision sent. The feed
      // may not have read up to that head yet (its NOTIFY still on the way): Postgres then.
      const target = await currentRevision(sql);
      let cursor = start.revision;
      while (cursor < target && !done) {
        const fed: ChangeRow[] = await feed.read(cursor, TAIL_PAGE_SIZE);
        const rows = fed.length > 0 ? fed : await readChangesAfter(sql, cursor, TAIL_PAGE_SIZE);
        if (rows.length === 0) break;
        cursor = await sendRows(rows, cursor);
      }
      if (done) throw new StreamStopped();
      await send({ snapshot_end: { revision: formatRevision(cursor) } });
      slog.info({ revision: cursor, entities: sent, replayed: cursor - start.revision }, 'watch: snapshot sent');
      return cursor;
    };

    const run = async (): Promise<void> => {
      const { head, oldest } = await logBounds(sql);
      let threshold = opts.maxTailChanges;
      if (head - from > threshold && opts.tailPerSnapshotRow > 0) {
        threshold = Math.max(threshold, Math.floor(opts.tailPerSnapshotRow * await estimateSnapshotRows(sql)));
      }
      const reason = snapshotReason(from, head, oldest, threshold);
      const resumable = resume !== null && canResume(resume.revision, head, oldest);
      let cursor = from;
      if (reason !== null || resumable) {
        // Each snapshot keeps a pooled connection busy page after page: at most
        // opts.maxConcurrentSnapshots per process, so a fleet restart cannot starve the API.
        // Waiting nodes get heartbeats, so their idle timeout does not fire.
        const acquired = snapshots.acquire();
        while (!(await Promise.race([acquired.then(() => true), sleep(opts.heartbeatIntervalMs).then(() => false)]))) {
          await send({ heartbeat: { revision: formatRevision(feed.latest()) } });
        }
        try {
          if (done) return;
          cursor = resumable
            ? await sendSnapshot({ revision: resume!.revision, cursor: resume!.cursor, resumed: true }, 'resume')
            : await sendSnapshot({ revision: await currentRevision(sql), cursor: { source: 0, after: null }, resumed: false }, reason);
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
          cursor = await sendRows(rows, cursor);
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

/** Internal: thrown into the snapshot copy to stop it when the client went away. */
class StreamStopped extends Error {}
