/**
 * The evaluation node's HTTP server on uWebSockets.js (DESIGN.md "Evaluation node"): builds the
 * shared context (metrics, usage counter, evaluator, GeoIP, feed cache), registers the routes and
 * listens on `config.host:config.flagsPort` (0 = any free port).
 *
 * Evaluation mode: `config.evalThreads = 0` evaluates on the IO thread (inline); N > 0 runs a
 * Piscina pool of N workers that open the store's LMDB environment (`storePath`, default
 * `<dataDir>/lmdb`) read-only. The IO thread's compiled-project cache is dropped per project on
 * `store.onApplied`, so answers follow the store without per-request checks.
 *
 * The same server runs inside each IO thread of a multi-threaded node (`ioThread` option;
 * http/io-threads.ts), where the main thread renders /metrics, holds the probe listener and the
 * process metrics, and shares the feed limiter and the GeoIP bytes.
 *
 * HTTP/1.0 and Host-less requests: the uWebSockets.js build in package.json (20.30) accepts only
 * `HTTP/1.1` request lines with a Host header. For anything else its parser neither answers nor
 * closes: it waits for more bytes, and its fixed 10 s HTTP idle timeout closes the connection
 * (9–12 s in practice). It offers no hook before parsing, so the node cannot answer them from
 * JavaScript; clients that send them (HAProxy's default `option httpchk`, old load balancers)
 * use the probe listener (`SWITCHYARD_PROBE_PORT`, probe-server.ts, node:http). Later
 * uWebSockets releases answer such requests with 400/505 and close at once.
 */
import path from 'node:path';
import uWS from 'uWebSockets.js';
import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import type { NodeStore } from '../store/lmdb.js';
import { geoipFromBytes, loadGeoipBytes, NO_GEOIP, type Geoip } from '../geoip/index.js';
import { FlagsEngine, inlineEvaluator, poolEvaluator, type Evaluator } from '../pool/index.js';
import type { NodeHttpContext, SyncState } from './context.js';
import { DefinitionsFeedCache } from '../../feed/definitions-feed.js';
import { Metrics, type OutboxFigures } from './metrics.js';
import { EvaluationShare } from './eval-share.js';
import { TokenBuckets, type RateLimiter } from './rate-limit.js';
import type { ProbeAnswer } from './probes.js';
import { registerRoutes } from './routes.js';
import type { CaptureHandler } from './capture-routes.js';
import { FlagUsage } from './usage.js';
import { ContinuityRecorder } from './continuity.js';
import { startProbeServer, type ProbeServer } from './probe-server.js';
import type { CapturedEvent } from '../../contract/events.js';

export type { SyncState, CaptureHandler };
export { FlagUsage };

/** Options of {@link startNodeHttp}. */
export interface NodeHttpOptions {
  config: Config;
  log: Logger;
  store: NodeStore;
  /** Sync client state for /metrics (lag, connection), when available. */
  syncState?: () => SyncState | undefined;
  /** The node's Watch client (src/eval-node/sync/client.ts); used for /metrics when `syncState` is absent. */
  sync?: { state(): { connected: boolean; lag: number; snapshotsApplied?: number; lastEventAtMs?: number | null } };
  /** LMDB path workers open read-only (pool mode); default `<config.dataDir>/lmdb`. */
  storePath?: string;
  /** Capture endpoints (`/i/v0/e/`, `/batch/`, …): served only when given (capture-routes.ts). */
  capture?: CaptureHandler;
  /**
   * Durable append to the capture outbox (CaptureService.append): enables the experience-
   * continuity override records of /flags (continuity.ts). Without it they are not written.
   */
  captureAppend?: (events: CapturedEvent[]) => Promise<void>;
  /** Port override (default `config.flagsPort`). */
  port?: number;
  /**
   * The GeoIP database already in shared memory ({@link loadGeoipOnce}; null = none): IO threads
   * share the main thread's copy instead of reading 60 MB each. Default: read it here.
   */
  geoipBytes?: Uint8Array | null;
  /** The capture outbox's sizes for /metrics (CaptureService.outbox). */
  outboxStorage?: () => OutboxFigures;
  /**
   * Set by an IO thread (http/io-threads.ts; the main thread runs sync, capture and probes):
   * the shared feed limiter, `/metrics` rendered by the main thread, no process metrics and no
   * probe listener here.
   */
  ioThread?: { index: number; feedLimiter: RateLimiter; renderMetrics(): Promise<ProbeAnswer> };
}

/** A running node HTTP server. */
export interface NodeHttp {
  port: number;
  /** Port of the probe listener (probe-server.ts), or null when `config.probePort` is null. */
  probePort: number | null;
  /** Base URL, e.g. `http://127.0.0.1:8010` ({flags_url}). */
  url: string;
  /** Per-organization /flags request counts (read and reset with `takeUsage()`). */
  usage: FlagUsage;
  metrics: Metrics;
  /** Experience-continuity override records (counters), when a capture append was given. */
  continuity?: ContinuityRecorder;
  /** 'inline' or 'pool'. */
  mode: 'inline' | 'pool';
  /** Runs a full GC in every IO thread (http/io-threads.ts; absent when serving on the main thread). */
  collectGarbage?(): Promise<void>;
  /** Stops listening, closes open connections, stops the pool and unsubscribes from the store. */
  close(): Promise<void>;
}

/**
 * Reads the GeoIP database once into shared memory (the IO threads and pool workers use these
 * same bytes); a missing or unreadable file disables GeoIP with a warning (null).
 */
export function loadGeoipOnce(config: Config, log: Logger): Uint8Array | null {
  try {
    return loadGeoipBytes(config.geoipDbPath);
  } catch (e) {
    log.warn({ err: e, path: config.geoipDbPath }, 'GeoIP database unavailable; $geoip_* properties disabled');
    return null;
  }
}

/** The reader over `bytes` (shared, not copied), or no GeoIP. */
function openGeoip(bytes: Uint8Array | null): { geoip: Geoip; bytes: Uint8Array | null } {
  return bytes === null ? { geoip: NO_GEOIP, bytes: null } : { geoip: geoipFromBytes(bytes), bytes };
}

/** The sync client's state as the HTTP layer reports it (/metrics, /_ready). */
export function syncStateOf(sync: NonNullable<NodeHttpOptions['sync']>): () => SyncState {
  return () => {
    const s = sync.state();
    return { lagRevisions: s.lag, connected: s.connected, snapshotsApplied: s.snapshotsApplied, lastEventAgeSeconds: s.lastEventAtMs == null ? null : (Date.now() - s.lastEventAtMs) / 1000 };
  };
}

/** Starts the node's HTTP server. @throws when the port cannot be bound. */
export async function startNodeHttp(opts: NodeHttpOptions): Promise<NodeHttp> {
  const { config, store } = opts;
  const log = opts.log.child({ component: 'node-http' });
  const { geoip, bytes } = openGeoip(opts.geoipBytes !== undefined ? opts.geoipBytes : loadGeoipOnce(config, log));
  const engine = new FlagsEngine(store, geoip, true);
  // Swap compiled projects whole on every applied change; inline mode recompiles the projects it
  // was serving right away (next turn), so no request pays for a compile after a change.
  const warmAfterChange = config.evalThreads === 0;
  const unsubscribe = store.onApplied((_rev, projectIds) => {
    const dropped = engine.invalidate(projectIds);
    if (warmAfterChange && dropped.length > 0) {
      setImmediate(() => {
        for (const id of dropped) {
          try { engine.warm(id); } catch (e) { log.error({ err: e, project_id: id }, 'recompiling a project failed'); }
        }
      });
    }
  });
  let evaluator: Evaluator;
  if (config.evalThreads > 0) {
    evaluator = poolEvaluator(config.evalThreads, { storePath: opts.storePath ?? path.join(config.dataDir, 'lmdb'), geoipBytes: bytes }, engine, config.evalTaskTimeoutMs);
  } else {
    evaluator = inlineEvaluator(engine);
  }
  const ctx: NodeHttpContext = {
    config, log, store, evaluator,
    metrics: new Metrics(opts.ioThread === undefined, opts.ioThread?.index ?? null),
    usage: new FlagUsage(),
    feed: new DefinitionsFeedCache(),
    feedLimiter: opts.ioThread?.feedLimiter ?? new TokenBuckets(config.definitionsRatePerMinute, 60_000),
    evalShare: new EvaluationShare(config.projectEvalSharePercent),
    renderMetrics: opts.ioThread?.renderMetrics,
    outboxStorage: opts.outboxStorage,
    geoipEnabled: bytes !== null,
    needsGeoip: (projectId) => engine.needsGeoip(projectId),
    syncState: opts.syncState ?? (opts.sync ? syncStateOf(opts.sync) : undefined),
    continuity: opts.captureAppend === undefined ? undefined : new ContinuityRecorder({
      store, log, append: opts.captureAppend, flagsNeeding: (projectId, req) => engine.continuityFlags(projectId, req),
    }),
  };
  const app = uWS.App();
  registerRoutes(app, ctx, opts.capture);
  const wanted = opts.port ?? config.flagsPort;
  const listenSocket = await new Promise<uWS.us_listen_socket>((resolve, reject) => {
    app.listen(config.host, wanted, (s) => {
      if (s) resolve(s);
      else reject(new Error(`cannot listen on ${config.host}:${wanted}`));
    });
  });
  const port = uWS.us_socket_local_port(listenSocket);
  log.info({ port, mode: evaluator.mode, threads: config.evalThreads }, 'evaluation node HTTP listening');
  let probes: ProbeServer | null = null;
  try {
    if (config.probePort !== null && opts.ioThread === undefined) probes = await startProbeServer(ctx, config.host, config.probePort, log);
  } catch (e) {
    uWS.us_listen_socket_close(listenSocket);
    unsubscribe();
    await evaluator.close();
    throw e;
  }
  let closed = false;
  return {
    port,
    probePort: probes?.port ?? null,
    url: `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`,
    usage: ctx.usage,
    metrics: ctx.metrics,
    continuity: ctx.continuity,
    mode: evaluator.mode,
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      uWS.us_listen_socket_close(listenSocket);
      // Open connections go too: an IO thread must not end with uWS sockets open (that aborts the
      // process), and a stopping process has drained first (docs/operations.md), so its keep-alive
      // connections would otherwise hold it up to uWS's idle timeout.
      (app as unknown as { close(): void }).close(); // present in uWS.js 20.30, missing from its typings
      await probes?.close();
      unsubscribe();
      await evaluator.close();
    },
  };
}
