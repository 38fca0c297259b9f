/**
 * The node's Watch client (DESIGN.md "Evaluation node"; STYLE.md rule 9): keeps the LMDB store
 * in step with the control plane's change log.
 *
 * One stream at a time: Watch(from_revision = store.revision(), resume = the store's pending
 * snapshot) with the cluster token, then
 * - SnapshotBegin → stage every SnapshotChunk (entities, with the chunk's cursor in the same
 *   transaction) and Change into a new generation → SnapshotEnd → swap it in (one
 *   transaction). The store keeps serving its previous complete state throughout. A stream that
 *   ends mid-snapshot keeps the staged part: the next stream asks to resume it from the last
 *   cursor staged; when the server starts over (SnapshotBegin not `resumed`)
 *   or answers with the tail, the staged part is dropped;
 * - tail Changes (single or in ChangeBatch messages) received in one event-loop turn → one `applyBatch` (one transaction, with the
 *   revision of the last one); changes at or below the store's revision are skipped;
 * - Heartbeat → the control plane's head, for the lag metric.
 * Events are applied strictly in order by one drain loop; when the queue passes
 * {@link QUEUE_HIGH_WATER} changes the stream is paused (HTTP/2 flow control pushes back to the server).
 *
 * A change that cannot be decoded or applied (a payload too deep for msgpack, a
 * forged or legacy entity LMDB refuses) must not stall the feed behind it: a failed batch is
 * retried change by change, each in its own transaction, and each change that still fails is
 * skipped: logged at error level with its revision, kind, entity id and project, and counted
 * (`skippedChanges`, `lastSkippedRevision`; `/metrics`). A failure that is not the change's
 * (the store cannot write even a bare revision) fails the stream instead. The writing is apply-changes.ts.
 *
 * When the stream ends (error, server gone, {@link WATCH_IDLE_TIMEOUT_MS} without any event)
 * the client drains what it received, then reconnects after `backoffDelayMs(attempt)`
 * (backoff.ts); `attempt` resets only after a stream that made progress: it advanced the
 * applied revision, completed a snapshot, or stayed healthy for {@link HEALTHY_STREAM_MS}.
 * Delivering something is not progress (a stream that delivers a change it
 * cannot apply would otherwise reconnect at once, forever). The control plane's revision is noted
 * on receipt, so lag is truthful even while applying fails. The store stays readable throughout. Statuses are kept in `state().lastError` (UNAUTHENTICATED for a
 * wrong cluster token: nothing is applied, retries continue at the capped delay).
 *
 * Several control planes (control-planes.ts): each stream goes to the current address; every
 * stream end moves the node on to the next address. A stream that had been serving for at least
 * {@link FAILOVER_MIN_STREAM_MS} and ended for a reason that is not ours (the control plane died
 * or stopped) is followed by an immediate attempt at the next address, without backoff: the node
 * is watching again within a connection set-up (DESIGN.md "Scale and the cluster": within 2 s);
 * the backoff applies from the second failed attempt on, and the minimum stream age keeps two
 * control planes that each end streams at once from being retried in a tight loop.
 *
 * Protocol version (contract/protocol.ts): the node sends its version with every call and reads
 * the control plane's from the response headers before any event; a control plane more than one
 * version away (or one that refuses this node's version: FAILED_PRECONDITION with its version in
 * the trailers) is logged at error level, its stream is cancelled before anything is applied, and
 * the node keeps serving what its store holds while it retries (`state().protocolRefused`).
 */
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../../log.js';
import { clusterTokenMetadata } from '../../contract/metadata.js';
import { acceptedProtocols, protocolCompatible, protocolOf, PROTOCOL_METADATA_KEY, PROTOCOL_VERSION } from '../../contract/protocol.js';
import { ClientsByAddress, ControlPlanes } from './control-planes.js';
import { parseRevision, type ChangeMessage, type WatchEvent, type WatchRequest } from '../../contract/messages.js';
import type { WritableNodeStore } from '../store/lmdb.js';
import { backoffDelayMs, DEFAULT_BACKOFF, type BackoffPolicy } from './backoff.js';
import { CHUNK_QUEUE_WEIGHT, chunkChanges, queueWeight } from './decode.js';
import { changeApplier } from './apply-changes.js';
import type { SyncState } from './state.js';

export type { SyncState };

/**
 * A stream with no event for this long is abandoned and reopened, in ms. The server heartbeats
 * every 2 s; a link that drops packets for less than this keeps its stream (TCP delivers what was
 * held once it returns, so the node is current at once), and `/metrics` shows the silence meanwhile
 * (`lastEventAtMs`).
 */
export const WATCH_IDLE_TIMEOUT_MS = 35_000;
/** Queued changes above which the stream is paused until the applier catches up (resumed at half). */
export const QUEUE_HIGH_WATER = 20_000;
/** Most changes written in one LMDB transaction. */
export const MAX_BATCH_CHANGES = 5_000;
/** A stream open this long without failing counts as progress for the backoff, in ms. */
export const HEALTHY_STREAM_MS = 60_000;
/** Largest Watch message accepted, in bytes (grpc-js default is 4 MiB). */
export const MAX_RECEIVE_MESSAGE_BYTES = 64 * 1024 * 1024;
/** A stream serving at least this long before it ended is followed by an immediate attempt at the next control plane, in ms. */
export const FAILOVER_MIN_STREAM_MS = 1_000;
/** HTTP/2 keep-alive ping interval on the channel, in ms. */
export const CLIENT_KEEPALIVE_TIME_MS = 30_000;
/** Unanswered-ping timeout on the channel, in ms. */
export const CLIENT_KEEPALIVE_TIMEOUT_MS = 10_000;

/** Options of {@link startWatchClient}. */
export interface WatchClientOptions {
  /**
   * Control-plane gRPC addresses (a SWITCHYARD_CONTROL_PLANE value), or the node's shared
   * {@link ControlPlanes} so every gRPC user moves together.
   */
  controlPlane: string | ControlPlanes;
  /** Cluster token sent as `authorization: Bearer …`. */
  clusterToken: string;
  /** Identity in the control plane's logs. */
  nodeId: string;
  /** Reconnect policy overrides (tests shorten it). */
  backoff?: Partial<BackoffPolicy>;
  /** Idle timeout override, in ms. */
  idleTimeoutMs?: number;
  /** Protocol version this client speaks (default PROTOCOL_VERSION; tests of version skew). */
  protocolVersion?: number;
}

/** A running Watch client. */
export interface WatchClient {
  /** Current status (a copy). */
  state(): SyncState;
  /** Cancels the stream, waits for the applier to finish, closes the channel. */
  close(): Promise<void>;
}

/** Starts syncing `store` from the control plane; returns at once (connects in the background). */
export function startWatchClient(store: WritableNodeStore, opts: WatchClientOptions, parentLog: Logger): WatchClient {
  const log = parentLog.child({ component: 'sync' });
  const policy: BackoffPolicy = { ...DEFAULT_BACKOFF, ...opts.backoff };
  const idleTimeoutMs = opts.idleTimeoutMs ?? WATCH_IDLE_TIMEOUT_MS;
  const planes = typeof opts.controlPlane === 'string' ? new ControlPlanes(opts.controlPlane) : opts.controlPlane;
  const clients = new ClientsByAddress(planes, {
    'grpc.keepalive_time_ms': CLIENT_KEEPALIVE_TIME_MS,
    'grpc.keepalive_timeout_ms': CLIENT_KEEPALIVE_TIMEOUT_MS,
    'grpc.keepalive_permit_without_calls': 1,
    // Align the channel's own reconnect backoff with ours, or it may wait up to 120 s.
    'grpc.initial_reconnect_backoff_ms': policy.baseMs,
    'grpc.max_reconnect_backoff_ms': policy.capMs,
    // Change batches are capped at ~1 MiB by the server; one entity may be larger.
    'grpc.max_receive_message_length': MAX_RECEIVE_MESSAGE_BYTES,
  });
  const protocolVersion = opts.protocolVersion ?? PROTOCOL_VERSION;
  const metadata = clusterTokenMetadata(opts.clusterToken, protocolVersion);

  const st: SyncState = {
    connected: false, revision: store.revision(), controlPlaneRevision: 0, lag: 0, lastChangeAtMs: null, lastEventAtMs: null,
    snapshotting: false, snapshotStaged: 0, snapshotsApplied: 0, snapshotsResumed: 0, streamsOpened: 0, lastError: null,
    skippedChanges: 0, lastSkippedRevision: 0, controlPlane: null, failovers: 0, protocolRefused: null,
  };
  let closed = false;
  let current: grpc.ClientReadableStream<WatchEvent> | null = null;
  let wakeSleep: (() => void) | null = null;
  /** Consecutive streams that ended without delivering anything. */
  let failures = 0;

  /** The control plane's head as far as `ev` shows it (lag stays truthful while applying fails). */
  const noteRevision = (ev: WatchEvent): void => {
    try {
      if (ev.event === 'change') seen(parseRevision(ev.change.revision));
      else if (ev.event === 'changes' && ev.changes.changes.length > 0) seen(parseRevision(ev.changes.changes[ev.changes.changes.length - 1]!.revision));
    } catch { /* a malformed revision fails the stream when applied */ }
  };
  const seen = (rev: number): void => {
    if (rev > st.controlPlaneRevision) st.controlPlaneRevision = rev;
    st.revision = store.revision();
    st.lag = Math.max(0, st.controlPlaneRevision - st.revision);
  };

  const { applyTail, stageIsolated } = changeApplier(store, st, log);

  /**
   * Runs one stream to its end; resolves whether it made progress and whether the next attempt
   * goes at once to the next control plane (see the module doc).
   */
  const runStream = (): Promise<{ progressed: boolean; failover: boolean }> => new Promise((resolve) => {
    const openedAt = Date.now();
    const { address, client } = clients.get();
    st.controlPlane = address;
    /** When the first event arrived (ms since the epoch), or null. */
    let deliveredAt: number | null = null;
    /** The control plane's protocol version is one this node cannot read: nothing of it is applied. */
    let refused = false;
    const startRevision = store.revision();
    let completedSnapshot = false;
    let failedApplying = false;
    const pending = store.pendingSnapshot();
    const request: WatchRequest = {
      from_revision: String(store.revision()), node_id: opts.nodeId,
      resume: pending?.cursor ? { revision: String(pending.revision), cursor: Buffer.from(pending.cursor) } : null,
    };
    const call = (client as unknown as { Watch(req: WatchRequest, md: grpc.Metadata): grpc.ClientReadableStream<WatchEvent> }).Watch(request, metadata.clone());
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
            const resumed = ev.snapshot_begin.resumed && store.pendingSnapshot()?.revision === revision;
            if (resumed) st.snapshotsResumed++;
            else { await store.beginSnapshot(revision); st.snapshotStaged = 0; }
            snapshot = { revision };
            st.snapshotting = true;
            seen(revision);
            log.info({ revision, resumed }, resumed ? 'resuming snapshot' : 'receiving snapshot');
            break;
          }
          case 'snapshot_chunk': {
            queue.shift();
            if (!snapshot) throw new Error('SnapshotChunk outside a snapshot');
            queuedChanges -= CHUNK_QUEUE_WEIGHT;
            const changes = chunkChanges(ev.snapshot_chunk, snapshot.revision);
            await stageIsolated(changes, ev.snapshot_chunk.cursor);
            st.snapshotStaged += changes.length;
            break;
          }
          case 'change':
          case 'changes': {
            const batch = takeChanges();
            if (snapshot) {
              await stageIsolated(batch);
              st.snapshotStaged += batch.length;
            } else {
              // The server tails instead of resuming: what was staged is not needed.
              if (store.pendingSnapshot() !== null) await store.abortSnapshot();
              const from = store.revision();
              const fresh = batch.filter((c) => parseRevision(c.revision) > from);
              if (fresh.length > 0) {
                const revision = parseRevision(fresh[fresh.length - 1]!.revision);
                await applyTail(fresh, revision);
                st.lastChangeAtMs = Date.now();
                seen(revision);
              }
            }
            break;
          }
          case 'snapshot_end': {
            queue.shift();
            const revision = parseRevision(ev.snapshot_end.revision);
            if (!snapshot || revision < snapshot.revision) throw new Error(`SnapshotEnd ${revision} without matching SnapshotBegin`);
            await store.commitSnapshot(revision);
            snapshot = null;
            st.snapshotting = false;
            st.snapshotsApplied++;
            completedSnapshot = true;
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
        failedApplying = true;
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
        log.warn({ revision: snapshot.revision, staged: st.snapshotStaged }, 'stream ended mid-snapshot; the next stream resumes it');
        snapshot = null;
        st.snapshotting = false;
      }
      const healthy = delivered && !failedApplying && Date.now() - openedAt >= HEALTHY_STREAM_MS;
      const failover = !closed && !refused && !failedApplying && deliveredAt !== null && Date.now() - deliveredAt >= FAILOVER_MIN_STREAM_MS;
      if (!closed) {
        const next = clients.failed(address);
        if (next !== address) {
          st.failovers++;
          log.info({ from: address, to: next, immediate: failover }, 'moving to the next control plane');
        }
      }
      resolve({ progressed: store.revision() > startRevision || completedSnapshot || healthy, failover });
    };

    /** Refuses a control plane speaking `theirs` (see the module doc). */
    const refuse = (theirs: number, details: string): void => {
      refused = true;
      st.protocolRefused = { controlPlane: address, protocol: Number.isNaN(theirs) ? -1 : theirs };
      st.lastError = { code: grpc.status.FAILED_PRECONDITION, details };
      // While it stays so, log the first refusal and every tenth, not each retry.
      log[failures > 0 && failures % 10 !== 0 ? 'debug' : 'error']({ control_plane: address, control_plane_protocol: theirs, protocol: protocolVersion, accepts: acceptedProtocols(protocolVersion), details },
        'control plane speaks an incompatible protocol version; not applying anything from it, serving from the store');
    };
    call.on('metadata', (md: grpc.Metadata) => {
      const theirs = protocolOf(md);
      if (protocolCompatible(protocolVersion, theirs)) return;
      refuse(theirs, `control plane protocol version ${theirs}; this node speaks ${protocolVersion} and accepts ${acceptedProtocols(protocolVersion)}`);
      call.cancel();
    });

    call.on('data', (ev: WatchEvent) => {
      if (refused) return;
      if (!delivered) { delivered = true; deliveredAt = Date.now(); st.connected = true; st.lastError = null; st.protocolRefused = null; }
      st.lastEventAtMs = Date.now();
      armIdle();
      noteRevision(ev);
      queue.push(ev);
      queuedChanges += queueWeight(ev);
      if (!paused && queuedChanges >= QUEUE_HIGH_WATER) { paused = true; call.pause(); }
      schedule();
    });
    call.on('error', (err: grpc.ServiceError) => {
      if (closed || refused) return;
      if (err.code === grpc.status.FAILED_PRECONDITION && err.metadata?.get(PROTOCOL_METADATA_KEY).length) {
        refuse(protocolOf(err.metadata), err.details);
        return;
      }
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
      const { progressed, failover } = await runStream();
      if (closed) break;
      attempt = progressed ? 0 : attempt + 1;
      failures = attempt;
      const delayMs = failover ? 0 : backoffDelayMs(attempt, policy);
      await new Promise<void>((r) => {
        const t = setTimeout(r, delayMs);
        wakeSleep = () => { clearTimeout(t); r(); };
      });
      wakeSleep = null;
    }
  };
  const running = loop().catch((err: unknown) => log.error({ err }, 'watch loop crashed'));

  return {
    state: () => ({ ...st, revision: store.revision(), lag: Math.max(0, st.controlPlaneRevision - store.revision()), lastError: st.lastError && { ...st.lastError }, protocolRefused: st.protocolRefused && { ...st.protocolRefused } }),
    async close() {
      if (closed) return;
      closed = true;
      current?.cancel();
      wakeSleep?.();
      await running;
      clients.close();
    },
  };
}
