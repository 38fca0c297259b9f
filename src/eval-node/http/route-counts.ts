/**
 * Per-route request counts and latency buckets of the node's HTTP layer, counted in plain numbers
 * on the hot path and handed to prom-client only when /metrics is read.
 *
 * Why: prom-client's labelled `observe`/`inc` build a label object, validate it and hash it into a
 * string on every call; on `POST /flags` that was ~3 % of a request's CPU (cpu-prof of `make bench`,
 * io mode). Here a request costs one array index, a bucket scan over the fixed bounds and a few
 * additions. The exposition is prom-client's own: the request counters are prom-client Counters
 * filled in their `collect` hook, and {@link LatencyHistogram} answers `get()` with the values a
 * prom-client Histogram with the same buckets would hold (same series, labels, cumulative buckets,
 * `+Inf`, `_sum`, `_count`; summed across IO threads by AggregatorRegistry like any histogram).
 */
import type { Counter, Metric, MetricObjectWithValues, MetricValueWithName, Registry } from 'prom-client';

/** Counts of one route: answered requests by status, and latency observations. */
export class RouteCounts {
  /** Requests by HTTP status (first-seen order). */
  readonly byStatus = new Map<number, number>();
  /** Observations per latency bucket (not cumulative); index = position in the bounds. */
  readonly buckets: Float64Array;
  /** Sum of the observed latencies, in seconds. */
  sum = 0;
  /** Observations, including those above the last bound. */
  count = 0;

  constructor(private readonly bounds: readonly number[]) {
    this.buckets = new Float64Array(bounds.length);
  }

  /** Records one answer with `status` that took `seconds`. */
  record(status: number, seconds: number): void {
    this.byStatus.set(status, (this.byStatus.get(status) ?? 0) + 1);
    const b = this.bounds;
    for (let i = 0; i < b.length; i++) {
      if (seconds <= b[i]!) { this.buckets[i]!++; break; }
    }
    this.sum += seconds;
    this.count++;
  }
}

/** Sets `counter` (labels `route`, `status`) to the totals of `routes`; for the counter's `collect` hook. */
export function fillRequestCounter(counter: Counter<'route' | 'status'>, routes: ReadonlyMap<string, RouteCounts>): void {
  counter.reset();
  for (const [route, c] of routes) {
    for (const [status, n] of c.byStatus) counter.inc({ route, status: String(status) }, n);
  }
}

/** Options of {@link LatencyHistogram} (named like prom-client's). */
export interface LatencyHistogramOptions {
  name: string;
  help: string;
  buckets: readonly number[];
  /** The counts it reads, by route. */
  routes: ReadonlyMap<string, RouteCounts>;
  /** Registries it registers in at construction. */
  registers: readonly Registry[];
}

/**
 * A histogram (label `route`) read from {@link RouteCounts}, registered at construction: it renders and aggregates as a prom-client Histogram with the same buckets.
 * Routes without observations have no series, as in prom-client.
 */
export class LatencyHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';

  readonly name: string;
  readonly help: string;
  private readonly bounds: readonly number[];
  private readonly routes: ReadonlyMap<string, RouteCounts>;

  constructor(opts: LatencyHistogramOptions) {
    this.name = opts.name;
    this.help = opts.help;
    this.bounds = opts.buckets;
    this.routes = opts.routes;
    for (const r of opts.registers) r.registerMetric(this as unknown as Metric);
  }

  /** prom-client's metric JSON (`Registry.getMetricsAsJSON`, `metrics()`). */
  async get(): Promise<MetricObjectWithValues<MetricValueWithName<string>>> {
    const values: MetricValueWithName<string>[] = [];
    const bucket = `${this.name}_bucket`;
    for (const [route, c] of this.routes) {
      if (c.count === 0) continue;
      let acc = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        acc += c.buckets[i]!;
        values.push({ labels: { le: this.bounds[i]!, route }, value: acc, metricName: bucket });
      }
      values.push({ labels: { le: '+Inf', route }, value: c.count, metricName: bucket });
      values.push({ labels: { route }, value: c.sum, metricName: `${this.name}_sum` });
      values.push({ labels: { route }, value: c.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: 'histogram', values, aggregator: 'sum' } as unknown as MetricObjectWithValues<MetricValueWithName<string>>;
  }

  /** Registry.resetMetrics: the counts belong to the node and are not reset here. */
  reset(): void {}
}
