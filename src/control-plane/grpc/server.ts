/**
 * The control plane's gRPC server (DESIGN.md "Processes": port SWITCHYARD_GRPC_PORT, default
 * 50051): serves proto/switchyard.proto's `switchyard.v1.Switchyard` with
 * - `Watch` (watch.ts), fed by one change-log listener per process (change-feed.ts);
 * - `ReportUsage` (usage.ts): nodes' /flags request counts into the quota service;
 * - `Ingest` (ingest.ts): event batches from nodes' capture outboxes, acknowledged after commit;
 * - `SnapshotImage` (snapshot-image/serve.ts): copies of the node store this control plane keeps
 *   current (snapshot-image/replica.ts, started once the port is bound, when config.snapshotImage).
 *
 * The server also compacts and prunes the change log every {@link PRUNE_INTERVAL_MS} (change-log/retention.ts;
 * safe on every replica at once), since the log it serves is what needs the retention.
 *
 * Every call passes the protocol-version gate first (protocol.ts; contract/protocol.ts).
 *
 * Keep-alive: HTTP/2 pings every {@link KEEPALIVE_TIME_MS}, connection dropped when one is not
 * answered within {@link KEEPALIVE_TIMEOUT_MS}; on top of that Watch sends Heartbeat events.
 */
import * as grpc from '@grpc/grpc-js';
import { APPLICATION_NAME, connect, type Sql } from '../db/connect.js';
import type { Config } from '../../config.js';
import type { Logger } from '../../log.js';
import { switchyardService } from '../../contract/loader.js';
import { hasClusterToken } from './auth.js';
import { startChangeFeed } from './change-feed.js';
import { createWatchHandler, type WatchOptions } from './watch.js';
import { createIngestHandler } from './ingest.js';
import { createReportUsageHandler } from './usage.js';
import { compactChangeLog, pruneChangeLog } from '../change-log/retention.js';
import { imageConfig, startImageReplica, type ImageReplica } from '../snapshot-image/replica.js';
import { createSnapshotImageHandler } from '../snapshot-image/serve.js';
import { PROTOCOL_VERSION } from '../../contract/protocol.js';
import { withProtocolGate } from './protocol.js';

/** `application_name` of the change feed's LISTEN connection. */
export const LISTEN_APPLICATION_NAME = `${APPLICATION_NAME}-listen`;
/** Interval between HTTP/2 keep-alive pings on idle connections, in milliseconds. */
export const KEEPALIVE_TIME_MS = 30_000;
/** How long a keep-alive ping may go unanswered before the connection is closed, in milliseconds. */
export const KEEPALIVE_TIMEOUT_MS = 10_000;
/** Period of the change-log retention job, in milliseconds. */
export const PRUNE_INTERVAL_MS = 60 * 60 * 1000;
/** Grace period for in-flight calls on close before they are cancelled, in milliseconds. */
export const SHUTDOWN_GRACE_MS = 2_000;

/**
 * Dependencies of {@link startGrpcServer}; `watch` overrides Watch tunables (tests),
 * `protocolVersion` the version this server speaks (default PROTOCOL_VERSION; tests of version skew),
 * `databaseUrl` where the change feed opens its own LISTEN connection (change-feed.ts; without it
 * it LISTENs on `sql`).
 */
export interface GrpcServerDeps {
  sql: Sql; config: Config; log: Logger; watch?: Partial<WatchOptions>; protocolVersion?: number; databaseUrl?: string;
}

/** A running gRPC server. */
export interface GrpcServer {
  /** Bound port (the OS's pick when config.grpcPort is 0). */
  port: number;
  /** Ends every Watch stream with UNAVAILABLE, stops the change feed and the server. */
  close(): Promise<void>;
}

/**
 * Binds `${config.host}:${config.grpcPort}` (insecure transport; the cluster token
 * authenticates calls) and starts serving.
 * @throws when config.clusterToken is null (a control plane must not accept anonymous nodes),
 *   when the port cannot be bound, or when LISTEN fails.
 */
export async function startGrpcServer(deps: GrpcServerDeps): Promise<GrpcServer> {
  const { sql, config } = deps;
  const log = deps.log.child({ component: 'grpc' });
  const token = config.clusterToken;
  if (token === null) throw new Error('SWITCHYARD_CLUSTER_TOKEN is required to serve gRPC');

  const url = deps.databaseUrl;
  const feed = await startChangeFeed(sql, log, url === undefined ? {} : {
    listenPool: (handlers) => connect(url, { max: 1, applicationName: LISTEN_APPLICATION_NAME, ...handlers }),
  });
  const watch = createWatchHandler({ sql, feed, log, clusterToken: token, options: deps.watch });

  let replica: ImageReplica | null = null;
  const handlers: grpc.UntypedServiceImplementation = withProtocolGate({
    Watch: watch.handler as grpc.UntypedHandleCall,
    SnapshotImage: createSnapshotImageHandler({ replica: () => replica, clusterToken: token, log, tmpDir: config.dataDir }) as grpc.UntypedHandleCall,
    Ingest: createIngestHandler({ sql, log, authorize: (md) => hasClusterToken(md, token) }) as grpc.UntypedHandleCall,
    ReportUsage: createReportUsageHandler({ sql, log, clusterToken: token }) as grpc.UntypedHandleCall,
  }, deps.protocolVersion ?? PROTOCOL_VERSION, log);

  const server = new grpc.Server({
    'grpc.keepalive_time_ms': KEEPALIVE_TIME_MS,
    'grpc.keepalive_timeout_ms': KEEPALIVE_TIMEOUT_MS,
    'grpc.keepalive_permit_without_calls': 1,
  });
  server.addService(switchyardService().service, handlers);
  let port: number;
  try {
    port = await new Promise<number>((resolve, reject) => {
      server.bindAsync(`${config.host}:${config.grpcPort}`, grpc.ServerCredentials.createInsecure(), (err, p) => {
        if (err) { reject(err); return; }
        resolve(p);
      });
    });
  } catch (err) {
    server.forceShutdown(); // nothing bound: releases what the server holds, so the process can exit
    await feed.close();
    throw err;
  }
  log.info({ port }, 'gRPC server listening');
  if (config.snapshotImage) {
    const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host.includes(':') ? `[${config.host}]` : config.host;
    try {
      replica = await startImageReplica(imageConfig(config, `${host}:${port}`), log);
    } catch (err) {
      // Nodes still bootstrap through Watch snapshots; only the fast path is missing.
      log.error({ err }, 'snapshot image unavailable: could not open its store');
    }
  }
  const prune = setInterval(() => {
    compactChangeLog(sql).then(async (compacted) => {
      const pruned = await pruneChangeLog(sql);
      if (compacted + pruned > 0) log.info({ compacted, pruned }, 'change log compacted and pruned');
    }).catch((err: unknown) => log.warn({ err }, 'change-log retention failed'));
  }, PRUNE_INTERVAL_MS);
  prune.unref();

  let closing: Promise<void> | null = null;
  return {
    port,
    close() {
      closing ??= (async () => {
        clearInterval(prune);
        const image = replica;
        replica = null;
        await image?.close();
        watch.registry.closeAll();
        await feed.close();
        await new Promise<void>((resolve) => {
          const force = setTimeout(() => { server.forceShutdown(); resolve(); }, SHUTDOWN_GRACE_MS);
          server.tryShutdown(() => { clearTimeout(force); resolve(); });
        });
      })();
      return closing;
    },
  };
}
