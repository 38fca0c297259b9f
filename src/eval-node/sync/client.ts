/**
 * The node's Watch client (DESIGN.md "Evaluation node"; STYLE.md rule 9): keeps the LMDB store
 * in step with the control plane's change log.
 *
 * One stream at a time: Watch(from_revision = store.revision()) with the cluster token, then
 * - SnapshotBegin → stage every Change into a new generation → SnapshotEnd → swap it in
 *   (one transaction); a stream that ends mid-snapshot discards the staged part, so the store
 *   keeps serving its previous complete state;
 * - tail Changes (single or in ChangeBatch messages) received in one event-loop turn → one `applyBatch` (one transaction, with the
 *   revision of the last one); changes at or below the store's revision are skipped;
 * - Heartbeat → the control plane's head, for the lag metric.
 * Events are applied strictly in order by one drain loop; when the queue passes
 * {@link QUEUE_HIGH_WATER} changes the stream is paused (HTTP/2 flow control pushes back to the server).
 *
 * When the stream ends (error, server gone, {@link WATCH_IDLE_TIMEOUT_MS} without any event)
 * the client drains what it received, then reconnects after `backoffDelayMs(attempt)`
 * (backoff.ts); `attempt` resets after a stream that delivered at least one event. The store
 * stays readable throughout. Statuses are kept in `state().lastError` (UNAUTHENTICATED for a
 * wrong cluster token: nothing is applied, retries continue at the capped delay).
 */
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../../log.js';
import { switchyardService } from '../../grpc/loader.js';
import { clusterTokenMetadata } from '../../grpc/metadata.js';
import { decodePayload } from '../../grpc/payload.js';
import { parseRevision, type ChangeMessage, type WatchEvent, type WatchRequest } from '../../grpc/messages.js';
import type { StoreChange, WritableNodeStore } from '../store/lmdb.js';
import { backoffDelayMs, DEFAULT_BACKOFF, type BackoffPolicy } from './backoff.js';

/** A stream with no event for this long is abandoned and reopened, in ms (server heartbeats every 10 s). */
export const WATCH_IDLE_TIMEOUT_MS = 35_000;
/** Queued changes above which the stream is paused until the applier catches up (resumed at half). */
export const QUEUE_HIGH_WATER = 20_000;
/** Most changes written in one LMDB transaction. */
export const MAX_BATCH_CHANGES = 5_000;
/** Largest Watch message accepted, in bytes (grpc-js default is 4 MiB). */
export const MAX_RECEIVE_MESSAGE_BYTES = 64 * 1024 * 1024;
/** HTTP/2 keep-alive ping interval on the channel, in ms. */
export const CLIENT_KEEPALIVE_TIME_MS = 30_000;
/** Unanswered-ping timeout on the channel, in ms. */
export const CLIENT_KEEPALIVE_TIMEOUT_MS = 10_000;

/** Sync status for `/metrics` and `/_ready`. */
export interface SyncState {
  /** A Watch stream is open and has delivered at least one event. */
  connected: boolean;
  /** Revision applied to the store. */
  revision: number;
  /** Latest revision the control plane reported (heartbeats, changes, snapshots). */
  controlPlaneRevision: number;
  /** max(0, controlPlaneRevision − revision), in revisions. */
  lag: number;
  /** Wall-clock time of the last applied change or snapshot, ms since the epoch; null before. */
  lastChangeAtMs: number | null;
  /** A snapshot is being staged. */
  snapshotting: boolean;
  /** Entities staged for the snapshot in progress. */
  snapshotStaged: number;
  /** Snapshots swapped in since start. */
  snapshotsApplied: number;
  /** Streams opened since start. */
  streamsOpened: number;
  /** Status of the last failed stream, or null. */
  lastError: { code: number; details: string } | null;
}

/** Options of {@link startWatchClient}. */
export interface WatchClientOptions {
  /** Control-plane gRPC address, `host:port`. */
  controlPlane: string;
  /** Cluster token sent as `authorization: Bearer …`. */
  clusterToken: string;
  /** Identity in the control plane's logs. */
  nodeId: string;
  /** Reconnect policy overrides (tests shorten it). */
  backoff?: Partial<BackoffPolicy>;
  /** Idle timeout override, in ms. */
  idleTimeoutMs?: number;
}

/** A running Watch client. */
export interface WatchClient {
  /** Current status (a copy). */
  state(): SyncState;
  /** Cancels the stream, waits for the applier to finish, closes the channel. */
  close(): Promise<void>;
}

/** Watch event → store change. @throws RevisionError on a malformed revision. */
function toStoreChange(c: ChangeMessage): StoreChange {
  const projectId = parseRevision(c.project_id);
  return {
    kind: c.kind,
    entityId: c.entity_id,
    projectId: projectId === 0 ? null : projectId,
    op: c.op === 'DELETE' ? 'delete' : 'upsert',
    payload: c.op === 'DELETE' ? null : decodePayload(c.payload),
  };
}

/** Starts syncing `store` from the control plane; returns at once (connects in the background). */
export function startWatchClient(store: WritableNodeStore, opts: WatchClientOptions, parentLog: Logger): WatchClient {
  const log = parentLog.child({ component: 'sync' });
  const policy: BackoffPolicy = { ...DEFAULT_BACKOFF, ...opts.backoff };
  const idleTimeoutMs = opts.idleTimeoutMs ?? WATCH_IDLE_TIMEOUT_MS;
  const Service = switchyardService();
  const client = new Service(opts.controlPlane, grpc.credentials.createInsecure(), {
    'grpc.keepalive_time_ms': CLIENT_KEEPALIVE_TIME_MS,
    'grpc.keepalive_timeout_ms': CLIENT_KEEPALIVE_TIMEOUT_MS,
    'grpc.keepalive_permit_without_calls': 1,
    // Align the channel's own reconnect backoff with ours, or it may wait up to 120 s.
    'grpc.initial_reconnect_backoff_ms': policy.baseMs,
    'grpc.max_reconnect_backoff_ms': policy.capMs,
    // Change batches are capped at ~1 MiB by the server; one entity may be larger.
    'grpc.max_receive_message_length': MAX_RECEIVE_MESSAGE_BYTES,
  });
  const metadata = clusterTokenMetadata(opts.clusterToken);

  const st: SyncState = {
    connected: false, revision: store.revision(), controlPlaneRevision: 0, lag: 0, lastChangeAtMs: null,
    snapshotting: false, snapshotStaged: 0, snapshotsApplied: 0, streamsOpened: 0, lastError: null,
  };
  let closed = false;
  let current: grpc.ClientReadableStream<WatchEvent> | null = null;
  let wakeSleep: (() => void) | null = null;
  /** Consecutive streams that ended without delivering anything. */
  let failures = 0;

  const seen = (rev: number): void => {
    if (rev > st.controlPlaneRevision) st.controlPlaneRevision = rev;
    st.revision = store.revision();
    st.lag = Math.max(0, st.controlPlaneRevision - st.revision);
  };

  /** Runs one stream to its end; resolves whether it delivered any event. */
  const runStream = (): Promise<boolean> => new Promise<boolean>((resolve) => {
    const request: WatchRequest = { from_revision: String(store.revision()), node_id: opts.nodeId };
    const call = (client as unknown as { Watch(req: WatchRequest, md: grpc.Metadata): grpc.ClientReadableStream<WatchEvent> }).Watch(request, metadata);
    current = call;
    st.streamsOpened++;
    const queue: WatchEvent[] = [];
    /** Changes (not events: a ChangeBatch holds many) waiting in `queue`. */
    let queuedChanges = 0;
    let delivered = false;
    let draining: Promise<void> | null = null;
    let paused = false;
    let ended = false;
    let snapshot: { revision: number } | null = null;
    let idle: NodeJS.Timeout | null = null;
    const armIdle = (): void => {
      if (idle) clearTimeout(idle);
      idle = setTimeout(() => {
        // Silence is ours, not the server's, while we hold the stream paused or are applying.
        if (paused || draining) { armIdle(); return; }
        log.warn({ idle_timeout_ms: idleTimeoutMs }, 'watch stream idle; reconnecting');
        call.cancel();
      }, idleTimeoutMs);
    };
    armIdle();

    /** Consecutive Change / ChangeBatch events at the head of the queue, up to MAX_BATCH_CHANGES (at least one event). */
    const takeChanges = (): ChangeMessage[] => {
      const out: ChangeMessage[] = [];
      while (queue.length > 0 && (out.length === 0 || out.length < MAX_BATCH_CHANGES)) {
        const ev = queue[0]!;
        if (ev.event === 'change') out.push(ev.change);
        else if (ev.event === 'changes') { for (const c of ev.changes.changes) out.push(c); }
        else break;
        queue.shift();
        queuedChanges -= ev.event === 'change' ? 1 : ev.changes.changes.length;
      }
      return out;
    };

    const drain = async (): Promise<void> => {
      // Let every event that arrived in this turn join the batch.
      await new Promise<void>((r) => setImmediate(r));
      while (queue.length > 0) {
        const ev = queue[0]!;
        switch (ev.event) {
          case 'snapshot_begin': {
            queue.shift();
            const revision = parseRevision(ev.snapshot_begin.revision);
            await store.beginSnapshot(revision);
            snapshot = { revision };
            st.snapshotting = true;
            st.snapshotStaged = 0;
            seen(revision);
            log.info({ revision }, 'receiving snapshot');
            break;
          }
          case 'change':
          case 'changes': {
            const batch = takeChanges();
            if (snapshot) {
              await store.stageSnapshot(batch.map(toStoreChange));
              st.snapshotStaged += batch.length;
            } else {
              const from = store.revision();
              const fresh = batch.filter((c) => parseRevision(c.revision) > from);
              if (fresh.length > 0) {
                const revision = parseRevision(fresh[fresh.length - 1]!.revision);
                await store.applyBatch(fresh.map(toStoreChange), revision);
                st.lastChangeAtMs = Date.now();
                seen(revision);
              }
            }
            break;
          }
          case 'snapshot_end': {
            queue.shift();
            const revision = parseRevision(ev.snapshot_end.revision);
            if (!snapshot || snapshot.revision !== revision) throw new Error(`SnapshotEnd ${revision} without matching SnapshotBegin`);
            await store.commitSnapshot(revision);
            snapshot = null;
            st.snapshotting = false;
            st.snapshotsApplied++;
            st.lastChangeAtMs = Date.now();
            seen(revision);
            log.info({ revision, entities: st.snapshotStaged }, 'snapshot applied');
            break;
          }
          case 'heartbeat': {
            queue.shift();
            seen(parseRevision(ev.heartbeat.revision));
            break;
          }
          default:
            queue.shift();
        }
        if (paused && queuedChanges < QUEUE_HIGH_WATER / 2 && !ended) { paused = false; call.resume(); }
      }
    };
    const schedule = (): void => {
      if (draining) return;
      draining = drain().catch((err: unknown) => {
        log.error({ err }, 'applying watch events failed; reconnecting');
        queue.length = 0;
        queuedChanges = 0;
        call.cancel();
      }).finally(() => {
        draining = null;
        if (queue.length > 0) schedule();
        else if (ended) void finish();
      });
    };

    let finished = false;
    const finish = async (): Promise<void> => {
      if (finished || draining || queue.length > 0) return; // finish runs again once drained
      finished = true;
      if (idle) clearTimeout(idle);
      current = null;
      st.connected = false;
      if (snapshot) {
        log.warn({ revision: snapshot.revision, staged: st.snapshotStaged }, 'stream ended mid-snapshot; discarding staged part');
        snapshot = null;
        st.snapshotting = false;
        await store.abortSnapshot().catch((err: unknown) => log.error({ err }, 'discarding staged snapshot failed'));
      }
      resolve(delivered);
    };

    call.on('data', (ev: WatchEvent) => {
      if (!delivered) { delivered = true; st.connected = true; st.lastError = null; }
      armIdle();
      queue.push(ev);
      queuedChanges += ev.event === 'change' ? 1 : ev.event === 'changes' ? ev.changes.changes.length : 0;
      if (!paused && queuedChanges >= QUEUE_HIGH_WATER) { paused = true; call.pause(); }
      schedule();
    });
    call.on('error', (err: grpc.ServiceError) => {
      if (closed) return;
      st.lastError = { code: err.code, details: err.details };
      // While the control plane stays away, log the first failure and every tenth, not each retry.
      const quiet = !delivered && failures > 0 && failures % 10 !== 0;
      const level = err.code === grpc.status.UNAUTHENTICATED ? 'error' : quiet ? 'debug' : 'warn';
      log[level]({ code: grpc.status[err.code], details: err.details, failures }, 'watch stream ended');
    });
    call.on('status', () => { ended = true; void finish(); });
  });

  const loop = async (): Promise<void> => {
    let attempt = 0;
    while (!closed) {
      const delivered = await runStream();
      if (closed) break;
      attempt = delivered ? 0 : attempt + 1;
      failures = attempt;
      const delayMs = backoffDelayMs(attempt, policy);
      await new Promise<void>((r) => {
        const t = setTimeout(r, delayMs);
        wakeSleep = () => { clearTimeout(t); r(); };
      });
      wakeSleep = null;
    }
  };
  const running = loop().catch((err: unknown) => log.error({ err }, 'watch loop crashed'));

  return {
    state: () => ({ ...st, revision: store.revision(), lag: Math.max(0, st.controlPlaneRevision - store.revision()), lastError: st.lastError && { ...st.lastError } }),
    async close() {
      if (closed) return;
      closed = true;
      current?.cancel();
      wakeSleep?.();
      await running;
      client.close();
    },
  };
}
