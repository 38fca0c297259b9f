/**
 * Prometheus metrics of the management API (DESIGN.md "Processes": `GET /metrics` in
 * Prometheus text), on prom-client: requests by route pattern, method and
 * status, a latency histogram per route pattern, and prom-client's default process metrics
 * (CPU, memory, event-loop lag, handles, GC). Labels use the declared pattern
 * (`/api/projects/:project_id/feature_flags/:id`), never the raw path, so cardinality is
 * bounded by the route table. Each server has its own registry (several control planes may
 * share a process in tests).
 */
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';

/** Latency histogram upper bounds, in seconds. */
export const API_LATENCY_BUCKETS_SECONDS: readonly number[] = Object.freeze([0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]);

/** Request counters of one HTTP server. */
export class ApiMetrics {
  private readonly registry = new Registry();
  private readonly requests = new Counter({
    name: 'switchyard_api_requests_total', help: 'Management API requests answered.',
    labelNames: ['route', 'method', 'status'] as const, registers: [this.registry],
  });
  private readonly latency = new Histogram({
    name: 'switchyard_api_request_duration_seconds', help: 'Time from request to answer.',
    labelNames: ['route'] as const, buckets: [...API_LATENCY_BUCKETS_SECONDS], registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'switchyard_api_' });
  }

  /** Records one answered request; `route` is the matched pattern or `unmatched`. */
  observe(route: string, method: string, status: number, seconds: number): void {
    this.requests.inc({ route, method, status: String(status) });
    this.latency.observe({ route }, seconds);
  }

  /** Prometheus text (version 0.0.4) of every metric of this server. */
  render(): Promise<string> {
    return this.registry.metrics();
  }
}
