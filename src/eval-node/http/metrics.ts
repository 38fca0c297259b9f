/**
 * Prometheus metrics of the evaluation node's HTTP layer (DESIGN.md "Processes"; STYLE.md rule 7:
 * no per-request log line on /flags, metrics instead), on prom-client:
 * requests by route and status, a latency histogram per route with fixed buckets, failures by
 * the stage that failed, the store's revision, sync lag and connection (once the sync client
 * reports them), the evaluation pool's queue, and prom-client's default process metrics (CPU,
 * memory, event-loop lag, GC) under the `switchyard_node_` prefix.
 *
 * The hot path (`observe`, once per answered request) counts in plain numbers (route-counts.ts):
 * requests by route and status and the latency buckets are handed to prom-client when /metrics is
 * read, not observed through prom-client per request. `make bench` measures the cost against the
 * same run's uWebSockets.js ceiling.
 * Each node has its own registry (several nodes share a process in tests).
 */
import type { EnvironmentFigures } from '../store/figures.js';
import v8 from 'node:v8';
import { AggregatorRegistry, collectDefaultMetrics, Counter, Gauge, Registry, type MetricObjectWithValues, type MetricValue } from 'prom-client';
import { fillRequestCounter, LatencyHistogram, RouteCounts } from './route-counts.js';

/** One registry's metrics as prom-client's JSON (what IO threads send the main thread). */
export type MetricsJson = MetricObjectWithValues<MetricValue<string>>[];

/**
 * Names of the metrics an IO thread ships to the main thread: its per-request counters (summed
 * over threads) and its own `thread`-labelled series.
 */
const THREAD_METRICS: ReadonlySet<string> = new Set(['switchyard_node_http_requests_total', 'switchyard_node_http_request_duration_seconds', 'switchyard_node_request_failures_total', 'switchyard_node_io_thread_requests_total', 'switchyard_node_io_thread_heap_bytes']);

/** Route labels (stable: dashboards use them). */
export type RouteLabel = 'flags' | 'decide' | 'definitions' | 'capture' | 'remote_config' | 'ofrep' | 'health' | 'ready' | 'metrics' | 'other';

/** Every {@link RouteLabel}, bound ahead at construction. */
const ROUTES: readonly RouteLabel[] = ['flags', 'decide', 'definitions', 'capture', 'remote_config', 'ofrep', 'health', 'ready', 'metrics', 'other'];

/**
 * Stages of a /flags request (STYLE.md rule 5; flags-handler.ts and pool/engine.ts): filter,
 * properties, evaluate and serialize run inside the evaluator and fail together as `evaluate`.
 */
export type Stage = 'parse' | 'project' | 'quota' | 'filter' | 'properties' | 'evaluate' | 'serialize';

/** Latency histogram upper bounds, in seconds. */
export const LATENCY_BUCKETS_SECONDS: readonly number[] = Object.freeze([0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]);

/** Live values read when /metrics is scraped. */
export interface Gauges {
  revision(): number;
  /** Sync state as the sync client reports it (lag in revisions, connection), when known. */
  sync?(): { lagRevisions?: number | null; connected?: boolean; snapshotsApplied?: number; lastEventAgeSeconds?: number | null } | undefined;
  poolQueueSize(): number;
  poolMode: 'inline' | 'pool';
  /** LMDB environments on disk and mapped, and the capture outbox's payload. */
  storage?(): StorageFigures;
}

/** Sizes in bytes of the node's LMDB environments. */
export interface StorageFigures {
  store: EnvironmentFigures;
  outbox?: OutboxFigures;
}

/** The capture outbox's figures (capture/outbox.ts): LMDB sizes, payload waiting, its bound, appends shed. */
export interface OutboxFigures extends EnvironmentFigures { payloadBytes: number; limitBytes: number; shed: number }

/** {@link OutboxFigures} of `outbox`. */
export function outboxFigures(outbox: { storage(): EnvironmentFigures; bytes: number; maxBytes: number; shedCount: number }): OutboxFigures {
  return { ...outbox.storage(), payloadBytes: outbox.bytes, limitBytes: outbox.maxBytes, shed: outbox.shedCount };
}

/** Counters, histograms and gauges of one node; see the module doc. */
export class Metrics {
  private readonly registry = new Registry();
  /** Requests and latency by route, counted per request and read at scrape (route-counts.ts). */
  private readonly counts = new Map<RouteLabel, RouteCounts>(ROUTES.map((r) => [r, new RouteCounts(LATENCY_BUCKETS_SECONDS)]));
  // Both read `counts` at scrape; declared here so the exposition keeps its order.
  protected readonly requests = ((counts) => new Counter({
    name: 'switchyard_node_http_requests_total', help: 'HTTP requests answered by the evaluation node.',
    labelNames: ['route', 'status'] as const, registers: [this.registry],
    collect() { fillRequestCounter(this, counts); },
  }))(this.counts);
  protected readonly latency = new LatencyHistogram({
    name: 'switchyard_node_http_request_duration_seconds', help: 'Time from request to answer.',
    buckets: LATENCY_BUCKETS_SECONDS, routes: this.counts, registers: [this.registry],
  });
  private readonly failures = new Counter({
    name: 'switchyard_node_request_failures_total', help: 'Requests answered with an error, by the stage that failed.',
    labelNames: ['route', 'stage'] as const, registers: [this.registry],
  });
  private readonly revision = new Gauge({
    name: 'switchyard_node_revision', help: 'Last change-log revision applied to the node store.', registers: [this.registry],
  });
  private readonly queue = new Gauge({
    name: 'switchyard_node_eval_queue', help: 'Jobs waiting for an evaluation worker.', labelNames: ['mode'] as const, registers: [this.registry],
  });
  private readonly lmdbFile = new Gauge({
    name: 'switchyard_node_lmdb_file_bytes', help: 'Size of an LMDB environment\'s data file (store, outbox).', labelNames: ['env'] as const, registers: [this.registry],
  });
  private readonly lmdbMap = new Gauge({
    name: 'switchyard_node_lmdb_map_bytes', help: 'Map size reserved for an LMDB environment (address space; one mapping).', labelNames: ['env'] as const, registers: [this.registry],
  });
  private readonly lmdbResident = new Gauge({
    name: 'switchyard_node_lmdb_resident_bytes', help: 'Pages of an LMDB environment\'s data file mapped into the node process now (part of its RSS; released after bulk work).', labelNames: ['env'] as const, registers: [this.registry],
  });
  private readonly outboxPayload = new Gauge({
    name: 'switchyard_node_capture_outbox_bytes', help: 'Captured events waiting in the outbox (payload bytes; bounded by SWITCHYARD_MAX_OUTBOX_BYTES).', registers: [this.registry],
  });
  private readonly outboxLimit = new Gauge({
    name: 'switchyard_node_capture_outbox_limit_bytes', help: 'Bound of the capture outbox (SWITCHYARD_MAX_OUTBOX_BYTES); client requests are shed from 80 % of it.', registers: [this.registry],
  });
  private readonly outboxShed = new Gauge({
    name: 'switchyard_node_capture_outbox_shed_total', help: 'Capture requests answered 503 outbox_backlog (with Retry-After) near the outbox bound since start.', registers: [this.registry],
  });
  /** Registered the first time the sync client reports them (absent until known, never a made-up 0). */
  private lag: Gauge | null = null;
  private connected: Gauge | null = null;
  private lastEventAge: Gauge | null = null;
  private snapshots: Gauge | null = null;

  /** Requests this IO thread answered (`thread` label, read at scrape), when it is one of several (http/io-threads.ts). */
  private threadRequests = 0;

  /**
   * @param defaultMetrics collect prom-client's process metrics (CPU, memory, event loop, GC):
   *   once per process, so IO threads (http/io-threads.ts) pass false and the main thread keeps them
   * @param thread the IO thread's index: adds `switchyard_node_io_thread_requests_total{thread}`
   *   (how the kernel spread the connections) and `switchyard_node_io_thread_heap_bytes{thread,kind}`
   *   (the thread's V8 heap, used and total bytes: the default heap metrics describe the main thread only)
   */
  constructor(defaultMetrics = true, thread: number | null = null) {
    if (thread !== null) {
      const self = this;
      new Counter({
        name: 'switchyard_node_io_thread_requests_total', help: 'HTTP requests answered, by IO thread.',
        labelNames: ['thread'] as const, registers: [this.registry],
        collect() { this.reset(); if (self.threadRequests > 0) this.inc({ thread: String(thread) }, self.threadRequests); },
      });
      new Gauge({
        name: 'switchyard_node_io_thread_heap_bytes', help: 'V8 heap of an IO thread: used and total (committed) bytes.',
        labelNames: ['thread', 'kind'] as const, registers: [this.registry],
        collect() {
          const heap = v8.getHeapStatistics();
          this.set({ thread: String(thread), kind: 'used' }, heap.used_heap_size);
          this.set({ thread: String(thread), kind: 'total' }, heap.total_heap_size);
        },
      });
    }
    if (defaultMetrics) collectDefaultMetrics({ register: this.registry, prefix: 'switchyard_node_' });
  }

  /**
   * Registers a gauge read at every scrape: a figure owned outside the HTTP layer (the node's
   * memory releases, memory/release.ts). @throws when `name` is already registered.
   */
  addGauge(name: string, help: string, read: () => number): void {
    new Gauge({ name, help, registers: [this.registry], collect() { this.set(read()); } });
  }

  /**
   * Registers a counter read at every scrape from a running total owned outside the HTTP layer
   * (e.g. capture/outbox-recovery.ts); `read` must never decrease. @throws when `name` is
   * already registered.
   */
  addCounter(name: string, help: string, read: () => number): void {
    new Counter({ name, help, registers: [this.registry], collect() { this.reset(); this.inc(read()); } });
  }

  /** The metrics an IO thread ships to the main thread ({@link THREAD_METRICS}), as JSON. */
  async requestMetricsJson(): Promise<MetricsJson> {
    return (await this.registry.getMetricsAsJSON() as MetricsJson).filter((m) => THREAD_METRICS.has(m.name));
  }

  /** Records a request that failed (4xx or 5xx) in `stage`. */
  stageFailure(route: RouteLabel, stage: Stage): void {
    this.failures.inc({ route, stage });
  }

  /** Records one answered request. */
  observe(route: RouteLabel, status: number, seconds: number): void {
    this.counts.get(route)!.record(status, seconds);
    this.threadRequests++;
  }

  /**
   * The Prometheus text exposition (version 0.0.4), with `g` read now; `threads` are the IO
   * threads' {@link requestMetricsJson}, summed into this registry's own.
   */
  async render(g: Gauges, threads: readonly MetricsJson[] = []): Promise<string> {
    this.revision.set(g.revision());
    this.queue.reset();
    this.queue.set({ mode: g.poolMode }, g.poolQueueSize());
    const storage = g.storage?.();
    if (storage) {
      this.lmdbFile.set({ env: 'store' }, storage.store.fileBytes);
      this.lmdbMap.set({ env: 'store' }, storage.store.mapBytes);
      this.lmdbResident.set({ env: 'store' }, storage.store.residentBytes);
      if (storage.outbox) {
        this.lmdbFile.set({ env: 'outbox' }, storage.outbox.fileBytes);
        this.lmdbMap.set({ env: 'outbox' }, storage.outbox.mapBytes);
        this.lmdbResident.set({ env: 'outbox' }, storage.outbox.residentBytes);
        this.outboxPayload.set(storage.outbox.payloadBytes);
        this.outboxLimit.set(storage.outbox.limitBytes);
        this.outboxShed.set(storage.outbox.shed);
      }
    }
    const sync = g.sync?.();
    if (sync?.lagRevisions !== undefined && sync.lagRevisions !== null) {
      this.lag ??= new Gauge({ name: 'switchyard_node_sync_lag_revisions', help: 'Revisions the node is behind the control plane.', registers: [this.registry] });
      this.lag.set(sync.lagRevisions);
    }
    if (sync?.connected !== undefined) {
      this.connected ??= new Gauge({ name: 'switchyard_node_sync_connected', help: '1 while the Watch stream is connected.', registers: [this.registry] });
      this.connected.set(sync.connected ? 1 : 0);
    }
    if (sync?.lastEventAgeSeconds !== undefined && sync.lastEventAgeSeconds !== null) {
      this.lastEventAge ??= new Gauge({
        name: 'switchyard_node_sync_last_event_age_seconds',
        help: 'Seconds since the last Watch event (change, snapshot or heartbeat; the control plane heartbeats every 2 s). Growing: the node is not hearing its control plane and may be stale.',
        registers: [this.registry],
      });
      this.lastEventAge.set(sync.lastEventAgeSeconds);
    }
    if (sync?.snapshotsApplied !== undefined) {
      this.snapshots ??= new Gauge({
        name: 'switchyard_node_sync_snapshots_applied_total', help: 'Watch snapshots swapped in since start (a node started from a snapshot image and only tailing has 0).', registers: [this.registry],
      });
      this.snapshots.set(sync.snapshotsApplied);
    }
    if (threads.length === 0) return this.registry.metrics();
    const own = await this.registry.getMetricsAsJSON() as MetricsJson;
    return AggregatorRegistry.aggregate([own, ...threads]).metrics();
  }
}
