/**
 * Prometheus metrics of the management API (DESIGN.md "Processes": `GET /metrics` in
 * Prometheus text): requests by route pattern, method and status, and a latency histogram per
 * route pattern. Labels use the declared pattern (`/api/projects/:project_id/feature_flags/:id`),
 * never the raw path, so cardinality is bounded by the route table.
 */

/** Latency histogram upper bounds, in seconds. */
export const API_LATENCY_BUCKETS_SECONDS: readonly number[] = Object.freeze([0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]);

interface Histogram { counts: number[]; sum: number; total: number }

/** Request counters of one HTTP server. */
export class ApiMetrics {
  private readonly requests = new Map<string, number>();
  private readonly latency = new Map<string, Histogram>();

  /** Records one answered request; `route` is the matched pattern or `unmatched`. */
  observe(route: string, method: string, status: number, seconds: number): void {
    const key = `route="${route}",method="${method}",status="${status}"`;
    this.requests.set(key, (this.requests.get(key) ?? 0) + 1);
    let h = this.latency.get(route);
    if (!h) {
      h = { counts: new Array(API_LATENCY_BUCKETS_SECONDS.length).fill(0) as number[], sum: 0, total: 0 };
      this.latency.set(route, h);
    }
    const i = API_LATENCY_BUCKETS_SECONDS.findIndex((b) => seconds <= b);
    if (i >= 0) h.counts[i]!++;
    h.sum += seconds;
    h.total++;
  }

  /** Prometheus text of the counters (cumulative buckets, `+Inf` = total). */
  render(): string {
    const out = [
      '# HELP switchyard_api_requests_total Management API requests answered.',
      '# TYPE switchyard_api_requests_total counter',
    ];
    for (const [labels, n] of this.requests) out.push(`switchyard_api_requests_total{${labels}} ${n}`);
    out.push('# HELP switchyard_api_request_duration_seconds Time from request to answer.', '# TYPE switchyard_api_request_duration_seconds histogram');
    for (const [route, h] of this.latency) {
      let cum = 0;
      API_LATENCY_BUCKETS_SECONDS.forEach((b, i) => {
        cum += h.counts[i]!;
        out.push(`switchyard_api_request_duration_seconds_bucket{route="${route}",le="${b}"} ${cum}`);
      });
      out.push(`switchyard_api_request_duration_seconds_bucket{route="${route}",le="+Inf"} ${h.total}`);
      out.push(`switchyard_api_request_duration_seconds_sum{route="${route}"} ${h.sum}`);
      out.push(`switchyard_api_request_duration_seconds_count{route="${route}"} ${h.total}`);
    }
    return out.join('\n') + '\n';
  }
}
