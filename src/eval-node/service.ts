/**
 * A whole evaluation node as one unit: the LMDB store and Watch sync (node.ts), the HTTP layer
 * (http/server.ts on this thread, or http/io-threads.ts with `config.ioThreads` > 1), capture (its durable outbox and the shipper streaming it to the control
 * plane over gRPC Ingest, capture/index.ts) and the usage reporter that ships /flags counts
 * for quotas. Used by `switchyard eval-node` and `switchyard start`.
 *
 * Every gRPC user (Watch, Ingest, usage) follows the node's one {@link EvalNode.planes}: when
 * one of them finds the current control plane gone, all move to the next address.
 *
 * Stopping: {@link NodeService.drain} first turns `/_ready` to 503 `draining` and keeps serving
 * (a load balancer stops sending meanwhile); close() then stops HTTP (no new connections;
 * requests in flight finish), capture (stored events stay in the outbox for the next start),
 * the last usage report, then sync and store.
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
  try {
    capture = startCapture({
      config, log,
      projectIdForToken: (token) => node.store.projectByToken(token)?.id ?? null,
      ready: () => node.store.hasCompleteSnapshot(),
      openStream: openIngest,
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
        await capture.close();
        ingestClient.close();
        await usage.close();
        await node.close();
      })();
      return closing;
    },
  };
}
