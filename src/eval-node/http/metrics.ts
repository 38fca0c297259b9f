/**
 * Prometheus metrics of the evaluation node's HTTP layer (DESIGN.md "Processes"; STYLE.md rule 7:
 * no per-request log line on /flags, metrics instead): requests by route and status, a latency
 * histogram per route with fixed buckets, the store's revision, sync lag (when the sync client
 * reports it) and the evaluation pool's queue. Counting is a few array increments per request.
 */

/** Route labels (stable: dashboards use them). */
export type RouteLabel = 'flags' | 'decide' | 'definitions' | 'capture' | 'remote_config' | 'ofrep' | 'health' | 'ready' | 'metrics' | 'other';

/**
 * Stages of a /flags request (STYLE.md rule 5; flags-handler.ts and pool/engine.ts): filter,
 * properties, evaluate and serialize run inside the evaluator and fail together as `evaluate`.
 */
export type Stage = 'parse' | 'project' | 'quota' | 'filter' | 'properties' | 'evaluate' | 'serialize';

/** Latency histogram upper bounds, in seconds. */
export const LATENCY_BUCKETS_SECONDS: readonly number[] = Object.freeze([0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]);

/** Live gauges read when /metrics is scraped. */
export interface Gauges {
  revision(): number;
  /** Sync state as the sync client reports it (lag in revisions, connection), when known. */
  sync?(): { lagRevisions?: number | null; connected?: boolean } | undefined;
  poolQueueSize(): number;
  poolMode: 'inline' | 'pool';
}

interface Histogram {
  counts: number[];
  sum: number;
  total: number;
}

/** Counters and histograms; see the module doc. */
export class Metrics {
  private readonly requests = new Map<string, number>();
  private readonly latency = new Map<RouteLabel, Histogram>();
  private readonly failures = new Map<string, number>();

  /** Records a request that failed (4xx or 5xx) in `stage`. */
  stageFailure(route: RouteLabel, stage: Stage): void {
    const key = `${route} ${stage}`;
    this.failures.set(key, (this.failures.get(key) ?? 0) + 1);
  }

  /** Records one answered request. */
  observe(route: RouteLabel, status: number, seconds: number): void {
    const key = `${route} ${status}`;
    this.requests.set(key, (this.requests.get(key) ?? 0) + 1);
    let h = this.latency.get(route);
    if (h === undefined) {
      h = { counts: new Array(LATENCY_BUCKETS_SECONDS.length).fill(0) as number[], sum: 0, total: 0 };
      this.latency.set(route, h);
    }
    for (let i = 0; i < LATENCY_BUCKETS_SECONDS.length; i++) {
      if (seconds <= LATENCY_BUCKETS_SECONDS[i]!) { h.counts[i]!++; break; }
    }
    h.sum += seconds;
    h.total++;
  }

  /** Requests answered so far for `route` with `status` (tests). */
  count(route: RouteLabel, status: number): number {
    return this.requests.get(`${route} ${status}`) ?? 0;
  }

  /** The Prometheus text exposition. */
  render(g: Gauges): string {
    const out: string[] = [];
    out.push('# HELP switchyard_node_http_requests_total HTTP requests answered by the evaluation node.');
    out.push('# TYPE switchyard_node_http_requests_total counter');
    for (const [key, n] of this.requests) {
      const [route, status] = key.split(' ');
      out.push(`switchyard_node_http_requests_total{route="${route}",status="${status}"} ${n}`);
    }
    out.push('# HELP switchyard_node_http_request_duration_seconds Time from request to answer.');
    out.push('# TYPE switchyard_node_http_request_duration_seconds histogram');
    for (const [route, h] of this.latency) {
      let cum = 0;
      for (let i = 0; i < LATENCY_BUCKETS_SECONDS.length; i++) {
        cum += h.counts[i]!;
        out.push(`switchyard_node_http_request_duration_seconds_bucket{route="${route}",le="${LATENCY_BUCKETS_SECONDS[i]}"} ${cum}`);
      }
      out.push(`switchyard_node_http_request_duration_seconds_bucket{route="${route}",le="+Inf"} ${h.total}`);
      out.push(`switchyard_node_http_request_duration_seconds_sum{route="${route}"} ${h.sum}`);
      out.push(`switchyard_node_http_request_duration_seconds_count{route="${route}"} ${h.total}`);
    }
    out.push('# HELP switchyard_node_request_failures_total Requests answered with an error, by the stage that failed.');
    out.push('# TYPE switchyard_node_request_failures_total counter');
    for (const [key, n] of this.failures) {
      const [route, stage] = key.split(' ');
      out.push(`switchyard_node_request_failures_total{route="${route}",stage="${stage}"} ${n}`);
    }
    out.push('# HELP switchyard_node_revision Last change-log revision applied to the node store.');
    out.push('# TYPE switchyard_node_revision gauge');
    out.push(`switchyard_node_revision ${g.revision()}`);
    const sync = g.sync?.();
    if (sync?.lagRevisions !== undefined && sync.lagRevisions !== null) {
      out.push('# HELP switchyard_node_sync_lag_revisions Revisions the node is behind the control plane.');
      out.push('# TYPE switchyard_node_sync_lag_revisions gauge');
      out.push(`switchyard_node_sync_lag_revisions ${sync.lagRevisions}`);
    }
    if (sync?.connected !== undefined) {
      out.push('# HELP switchyard_node_sync_connected 1 while the Watch stream is connected.');
      out.push('# TYPE switchyard_node_sync_connected gauge');
      out.push(`switchyard_node_sync_connected ${sync.connected ? 1 : 0}`);
    }
    out.push('# HELP switchyard_node_eval_queue Jobs waiting for an evaluation worker.');
    out.push('# TYPE switchyard_node_eval_queue gauge');
    out.push(`switchyard_node_eval_queue{mode="${g.poolMode}"} ${g.poolQueueSize()}`);
    return out.join('\n') + '\n';
  }
}
