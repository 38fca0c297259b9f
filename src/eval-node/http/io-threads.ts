/**
 * A node serving its HTTP port from several threads (`SWITCHYARD_IO_THREADS`
 * > 1): `threads` worker threads each run the node's uWebSockets.js app (workers/io-thread.ts)
 * on the same port (port 0: a free one picked first, since a port bound as 0 cannot be shared), and the kernel
 * spreads connections over them (SO_REUSEPORT, which uSockets sets on Linux). Each reads the
 * shared LMDB environment read-only. The main thread keeps what must happen once per node:
 *
 * - the Watch client writes the store; every applied change is relayed to the threads, which
 *   swap their compiled projects as the main thread would ({@link NodeStore.relayApplied});
 * - capture: threads decode and validate, then transfer the packed events here; they are in the
 *   outbox (durably) before the thread answers 200, and the one shipper sends them on;
 * - usage counts (quota) are pushed here by the threads and taken by the usage reporter;
 * - `/metrics`, whichever thread receives it, is rendered here: the process metrics, revision and
 *   sync gauges of this thread plus every thread's request counters and histograms, summed;
 * - the optional probe listener (`SWITCHYARD_PROBE_PORT`) runs here;
 * - the feed rate limit lives in shared memory (SharedTokenBuckets), counted once per project;
 * - the GeoIP database is read once into a SharedArrayBuffer that every thread's reader uses.
 *
 * Experience-continuity records are deduplicated per thread: a record two threads both write is
 * stored twice, which the control plane's upsert makes harmless. A thread hit by an uncaught
 * error closes its sockets and ends (an IO thread ending with uWS sockets open would abort the
 * whole process); the main thread starts a new one on the same port, and the others serve
 * meanwhile.
 */
import net from 'node:net';
import { Worker } from 'node:worker_threads';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import type { NodeStore } from '../store/lmdb.js';
import type { CaptureService } from '../capture/index.js';
import { Metrics, outboxFigures, type MetricsJson } from './metrics.js';
import { FlagUsage } from './usage.js';
import { SharedTokenBuckets } from './rate-limit.js';
import { ThreadRpc } from './thread-rpc.js';
import { renderContinuityMetrics, type ContinuityCounters } from './continuity.js';
import { storeMetrics, type ProbeAnswer } from './probes.js';
import { startProbeServer, type ProbeServer } from './probe-server.js';
import type { NodeHttpContext, SyncState } from './context.js';
import { loadGeoipOnce, syncStateOf, type NodeHttp } from './server.js';
import type { IoThreadInit } from './io-thread-init.js';
import { TokenBuckets } from './rate-limit.js';
import { EvaluationShare } from './eval-share.js';
import { DefinitionsFeedCache } from '../../feed/definitions-feed.js';
import { FlagsEngine, inlineEvaluator } from '../pool/index.js';
import { NO_GEOIP } from '../geoip/index.js';

/** Options of {@link startIoThreads}. */
export interface IoThreadsOptions {
  config: Config;
  log: Logger;
  /** The node's writable store (the Watch client writes it). */
  store: NodeStore;
  /** LMDB path the threads open read-only. */
  storePath: string;
  /** Capture service (outbox + shipper), when the node captures. */
  capture?: CaptureService;
  sync?: { state(): { connected: boolean; lag: number; snapshotsApplied?: number } };
  threads: number;
  /** Port override (default `config.flagsPort`). */
  port?: number;
  /** Tests: enables {@link IoThreadsHttp.crashForTest}. */
  testHooks?: boolean;
}

/** The node's HTTP over IO threads: {@link NodeHttp} plus the threads' supervision. */
export interface IoThreadsHttp extends NodeHttp {
  /** Threads that ended on their own and were replaced. */
  restarts(): number;
  /** Tests (`testHooks`): makes thread `index` throw an uncaught error. */
  crashForTest(index: number): Promise<void>;
}

/** Compiled entry of an IO thread (under dist/). */
function threadFile(): string {
  return path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'workers', 'io-thread.js');
}

interface Thread { worker: Worker; rpc: ThreadRpc }

/** A port free on `host` right now (the kernel's pick for port 0). */
function freeLoopbackPort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, host, () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts `threads` IO threads on the node's port. Resolves once every thread listens.
 * @throws when a thread cannot start or bind (the others are stopped).
 */
export async function startIoThreads(opts: IoThreadsOptions): Promise<IoThreadsHttp> {
  const { config, store } = opts;
  const log = opts.log.child({ component: 'node-http' });
  const limiter = SharedTokenBuckets.allocate();
  const geoipBytes = loadGeoipOnce(config, log); // one shared copy for every thread
  const usage = new FlagUsage();
  const metrics = new Metrics(true);
  const threads: Thread[] = [];
  const syncState = opts.sync ? syncStateOf(opts.sync) : undefined;

  const renderMetrics = async (): Promise<ProbeAnswer> => {
    // Live threads only: a thread being replaced is missing from one scrape (its counters restart).
    const live = threads.filter((t) => spawned.has(t));
    const shares = (await Promise.all(live.map((t) => t.rpc.call<{ metrics: MetricsJson; continuity: ContinuityCounters | null }>('metricsJson').catch(() => null))))
      .filter((x): x is { metrics: MetricsJson; continuity: ContinuityCounters | null } => x !== null);
    const text = await metrics.render({
      revision: () => { try { return store.revision(); } catch { return 0; } },
      sync: syncState, poolQueueSize: () => 0, poolMode: 'inline',
      storage: () => ({ store: store.storage(), outbox: opts.capture ? outboxFigures(opts.capture.outbox) : undefined }),
    }, shares.map((s) => s.metrics));
    let continuity = '';
    if (shares.some((s) => s.continuity !== null)) {
      const sum: ContinuityCounters = { enqueued: 0, covered: 0, deduplicated: 0, failed: 0 };
      for (const s of shares) for (const k of Object.keys(sum) as (keyof ContinuityCounters)[]) sum[k] += s.continuity?.[k] ?? 0;
      continuity = renderContinuityMetrics(sum);
    }
    return { status: 200, body: (text.endsWith('\n') ? text : `${text}\n`) + continuity + storeMetrics({ store }), contentType: 'text/plain; version=0.0.4' };
  };

  const spawn = (index: number, port: number): Promise<{ thread: Thread; port: number }> => new Promise((resolve, reject) => {
    const init: IoThreadInit = { config, index, storePath: opts.storePath, port, limiter, withCapture: opts.capture !== undefined, geoipBytes, testHooks: opts.testHooks === true };
    const worker = new Worker(threadFile(), { workerData: init, ...(config.ioThreadYoungGenMb > 0 ? { resourceLimits: { maxYoungGenerationSizeMb: config.ioThreadYoungGenMb } } : {}) });
    const rpc = new ThreadRpc(worker);
    const thread = { worker, rpc };
    spawned.add(thread);
    for (const [name, shed] of [['append', false], ['appendShed', true]] as const) {
      rpc.serve(name, async (bytes) => {
        if (!opts.capture) throw new Error('this node does not capture');
        await opts.capture.appendPacked(new Uint8Array(bytes as ArrayBuffer), shed);
        return true;
      });
    }
    rpc.serve('metrics', renderMetrics);
    rpc.onNotice('usage', (m) => { for (const [org, n] of m.counts as [number, number][]) usage.addMany(org, n); });
    rpc.onNotice('listening', (m) => resolve({ thread, port: m.port as number }));
    worker.once('error', (e) => { log.error({ err: e, io_thread: index }, 'IO thread failed'); reject(e); });
    worker.once('exit', (code) => {
      spawned.delete(thread);
      rpc.close();
      if (code !== 0) reject(new Error(`IO thread ${index} exited with ${code}`));
      if (!closed && started) replace(index, thread);
    });
  });

  // A thread that ends on its own after start (an uncaught error: the thread closes its sockets
  // and exits 1, workers/io-thread.ts) is replaced on the same port; the others serve meanwhile.
  let started = false;
  let closed = false;
  let restarts = 0;
  const replace = (index: number, dead: Thread): void => {
    restarts++;
    log.error({ io_thread: index, restarts }, 'IO thread ended unexpectedly; starting a new one');
    setTimeout(() => {
      if (closed) return;
      spawn(index, port).then(({ thread }) => {
        const at = threads.indexOf(dead);
        if (at >= 0) threads[at] = thread; else threads.push(thread);
        if (closed) void stopOne(thread);
      }, (e: unknown) => log.error({ err: e, io_thread: index }, 'IO thread could not be restarted'));
    }, Math.min(5_000, 100 * restarts)).unref();
  };

  // Each thread closes its sockets and ends itself; terminate() only if it does not within 5 s.
  const stopOne = async (t: Thread): Promise<void> => {
    if (!spawned.has(t)) return;
    const exited = new Promise<void>((resolve) => t.worker.once('exit', () => resolve()));
    await t.rpc.call('close').catch(() => undefined);
    const timer = setTimeout(() => { void t.worker.terminate(); }, 5_000);
    await exited;
    clearTimeout(timer);
  };
  const stopAll = async (): Promise<void> => { await Promise.all(threads.map(stopOne)); };
  // Store changes go to every thread from the moment it exists: one that starts serving while the
  // next is still starting must not miss a change (its compiled projects are trusted until told).
  const spawned = new Set<Thread>();
  const unsubscribe = store.onApplied((revision, projectIds) => {
    for (const t of spawned) t.rpc.notify('applied', { revision, projectIds: [...projectIds] });
  });
  // A port bound as 0 joins no SO_REUSEPORT group (Linux), so port 0 is resolved here first; a
  // port taken meanwhile by someone else is retried with another.
  const wanted = opts.port ?? config.flagsPort;
  let port = 0;
  for (let attempt = 0; ; attempt++) {
    const candidate = wanted !== 0 ? wanted : await freeLoopbackPort(config.host);
    try {
      const first = await spawn(0, candidate);
      threads.push(first.thread);
      port = first.port;
      for (let i = 1; i < opts.threads; i++) threads.push((await spawn(i, port)).thread);
      break;
    } catch (e) {
      await stopAll();
      threads.length = 0;
      if (wanted !== 0 || attempt >= 4) { unsubscribe(); throw e; }
    }
  }
  let probes: ProbeServer | null = null;
  if (config.probePort !== null) {
    // The probes read the store (/_ready) and renderMetrics (/metrics) only; the rest is inert.
    const ctx: NodeHttpContext = {
      config, log, store, metrics, usage, feed: new DefinitionsFeedCache(), feedLimiter: new TokenBuckets(0, 60_000), evalShare: new EvaluationShare(100), geoipEnabled: false,
      needsGeoip: () => false, syncState, renderMetrics, evaluator: inlineEvaluator(new FlagsEngine(store, NO_GEOIP, true)),
    };
    try {
      probes = await startProbeServer(ctx, config.host, config.probePort, log);
    } catch (e) {
      unsubscribe();
      await stopAll();
      throw e;
    }
  }
  log.info({ port, io_threads: opts.threads }, 'evaluation node HTTP listening');
  started = true;
  return {
    port,
    probePort: probes?.port ?? null,
    url: `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`,
    usage,
    metrics,
    mode: 'inline',
    restarts: () => restarts,
    async collectGarbage() {
      await Promise.all(threads.filter((t) => spawned.has(t)).map((t) => t.rpc.call('collectGarbage').catch(() => undefined)));
    },
    async crashForTest(index) {
      if (!opts.testHooks) throw new Error('testHooks is off');
      await threads[index]?.rpc.call('test:crash').catch(() => undefined);
    },
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      unsubscribe();
      await probes?.close();
      await stopAll();
    },
  };
}
