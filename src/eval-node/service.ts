/**
 * A whole evaluation node as one unit: the LMDB store and Watch sync (node.ts), the HTTP layer
 * (http/server.ts on this thread, or http/io-threads.ts with `config.ioThreads` > 1), capture (its durable outbox and the shipper streaming it to the control
 * plane over gRPC Ingest, capture/index.ts) and the usage reporter that ships /flags counts
 * for quotas. Used by `switchyard eval-node` and `switchyard start`.
 *
 * A damaged capture outbox is moved aside before capture opens a fresh one, and the events of
 * every copy moved aside are recovered into the live outbox while the node runs
 * (capture/outbox-recovery.ts).
 *
 * Every gRPC user (Watch, Ingest, usage) follows the node's one {@link EvalNode.planes}: when
 * one of them finds the current control plane gone, all move to the next address.
 *
 * Stopping: {@link NodeService.drain} first turns `/_ready` to 503 `draining` and keeps serving
 * (a load balancer stops sending meanwhile); close() then stops HTTP (no new connections;
 * requests in flight finish), outbox recovery and capture (stored events stay in the outbox for
 * the next start), the last usage report, then sync and store.
 */
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { clusterTokenMetadata } from '../contract/metadata.js';
import { ClientsByAddress } from './sync/control-planes.js';
import { markDraining } from './http/probes.js';
import { nodeStorePath, startEvalNode, type EvalNode } from './node.js';
import { startIoThreads } from './http/io-threads.js';
import { startNodeHttp, type NodeHttp } from './http/server.js';
import { startUsageReporter } from './sync/usage-reporter.js';
import { startCapture, type CaptureService } from './capture/index.js';
import type { IngestClientCall } from './capture/shipper.js';
import { outboxFigures } from './http/metrics.js';
import { captureOutboxPath } from './capture/index.js';
import { checkOutbox, outboxRecoveryStats, startOutboxRecovery, type OutboxRecovery } from './capture/outbox-recovery.js';
import { startMemoryRelease, type MemoryRelease } from './memory/release.js';
import { collectGarbage } from './memory/gc.js';

/** Work units (changes applied, entities staged, outbox entries in or out) that make a memory release due. */
export const MEMORY_RELEASE_MIN_WORK = 1_000;
/** Fewest ms between two memory releases. */
export const MEMORY_RELEASE_MIN_INTERVAL_MS = 1_000;

/** A running node. */
export interface NodeService {
  node: EvalNode;
  http: NodeHttp;
  capture: CaptureService;
  /** Hands back the memory bulk work left behind (memory/release.ts). */
  memory: MemoryRelease;
  /**
   * Starts draining: `/_ready` answers 503 `draining` in every IO thread (the probe listener too)
   * while everything else keeps serving; close() stops. Process-wide (a stopping process drains).
   */
  drain(): void;
  close(): Promise<void>;
}

/**
 * Starts a node on `config` (data under `config.dataDir`, HTTP on `config.flagsPort`, control
 * plane at `config.controlPlane`). @throws when the cluster token is missing, a store cannot
 * open or the port cannot be bound (anything started is stopped again).
 */
export async function startNodeService(config: Config, log: Logger): Promise<NodeService> {
  const node = await startEvalNode(config, log);
  const ingestClients = new ClientsByAddress(node.planes);
  const ingestClient = { close: () => ingestClients.close() };
  /** Opens an Ingest stream to the current control plane; one that is gone or silent is reported failed. */
  const openIngest = (): IngestClientCall => {
    const { address, client } = ingestClients.get();
    const call = (client.Ingest as unknown as (md: grpc.Metadata) => IngestClientCall).call(client, clusterTokenMetadata(config.clusterToken!));
    call.on('error', (err: grpc.ServiceError) => {
      // CANCELLED: the shipper gave up waiting for an ack (or is stopping).
      if (err.code === grpc.status.UNAVAILABLE || err.code === grpc.status.CANCELLED || err.code === grpc.status.DEADLINE_EXCEEDED) ingestClients.failed(address);
    });
    return call;
  };
  let capture: CaptureService;
  let http: NodeHttp;
  const recoveryStats = outboxRecoveryStats();
  let recovery: OutboxRecovery | null = null;
  try {
    await checkOutbox(captureOutboxPath(config), log.child({ component: 'eval-node' }), recoveryStats);
    capture = startCapture({
      config, log,
      projectIdForToken: (token) => node.store.projectByToken(token)?.id ?? null,
      ready: () => node.store.hasCompleteSnapshot(),
      openStream: openIngest,
    });
    const live = capture;
    recovery = startOutboxRecovery({
      dir: captureOutboxPath(config), keep: config.keepMovedAside, log, stats: recoveryStats,
      append: (packed) => live.appendPacked(packed),
    });
  } catch (e) {
    ingestClient.close();
    await node.close();
    throw e;
  }
  try {
    http = config.ioThreads > 1
      ? await startIoThreads({ config, log, store: node.store, storePath: nodeStorePath(config), sync: node.sync, capture, threads: config.ioThreads })
      : await startNodeHttp({
        config, log, store: node.store, sync: node.sync, capture: capture.handler, captureAppend: capture.append,
        outboxStorage: () => outboxFigures(capture.outbox),
      });
  } catch (e) {
    await recovery.stop();
    await capture.close();
    ingestClient.close();
    await node.close();
    throw e;
  }
  const usage = startUsageReporter({
    controlPlane: node.planes, clusterToken: config.clusterToken!, nodeId: node.nodeId, take: () => http.usage.takeUsage(),
  }, log);
  const release = startMemoryRelease({
    files: [path.join(nodeStorePath(config), 'data.mdb'), path.join(captureOutboxPath(config), 'data.mdb')].map((f) => path.resolve(f)),
    activity: () => {
      const s = node.sync.state();
      return [s.revision, s.snapshotStaged, capture.outbox.entries];
    },
    collect: async () => { collectGarbage(); await http.collectGarbage?.(); },
    quietMs: config.memoryReleaseQuietMs,
    minWork: MEMORY_RELEASE_MIN_WORK,
    minIntervalMs: MEMORY_RELEASE_MIN_INTERVAL_MS,
    log: log.child({ component: 'eval-node' }),
  });
  const counters: [string, string, () => number][] = [
    ['switchyard_node_store_moved_aside_total', 'Node stores found damaged at start and moved aside (rebuilt from the control plane).', () => node.storeMovedAside],
    ['switchyard_node_capture_outbox_moved_aside_total', 'Capture outboxes found damaged at start and moved aside (capture continues on a fresh one).', () => recoveryStats.movedAside],
    ['switchyard_node_capture_outbox_recovered_entries_total', 'Capture requests recovered from outboxes moved aside into the live outbox.', () => recoveryStats.recoveredEntries],
    ['switchyard_node_capture_outbox_recovered_events_total', 'Events recovered from outboxes moved aside into the live outbox (shipped as any other; repeats are dropped at ingestion).', () => recoveryStats.recoveredEvents],
    ['switchyard_node_capture_outbox_unreadable_entries_total', 'Records of outboxes moved aside that could not be read as events (lost).', () => recoveryStats.unreadableEntries],
    ['switchyard_node_capture_outbox_unreadable_pages_total', 'Pages of outboxes moved aside that could not be read (their events are lost).', () => recoveryStats.unreadablePages],
    ['switchyard_node_capture_outbox_unrecognised_pages_total', 'Pages of outboxes moved aside with no recognisable header (damage, or old overflow data).', () => recoveryStats.unrecognisedPages],
    ['switchyard_node_capture_outbox_recovery_failures_total', 'Recoveries of an outbox moved aside that stopped before its end.', () => recoveryStats.failedRecoveries],
    ['switchyard_node_capture_outbox_copies_pruned_total', 'Outbox copies moved aside and deleted after recovery (SWITCHYARD_KEEP_MOVED_ASIDE).', () => recoveryStats.pruned],
  ];
  for (const [name, help, read] of counters) http.metrics.addCounter(name, help, read);
  http.metrics.addGauge('switchyard_node_memory_releases_total', 'Times the node handed memory back after bulk work (LMDB pages unmapped, arenas trimmed) since start.', () => release.releases);
  let closing: Promise<void> | null = null;
  return {
    node,
    http,
    capture,
    memory: release,
    drain: markDraining,
    close() {
      closing ??= (async () => {
        release.close();
        await http.close();
        await recovery.stop();
        await capture.close();
        ingestClient.close();
        await usage.close();
        await node.close();
      })();
      return closing;
    },
  };
}
