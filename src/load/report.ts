/**
 * `switchyard load` output: the JSON report (`--report`, shape {@link LoadReport}, documented in
 * docs/load-testing.md) and the human summary printed to stdout.
 */
import type { LoadOptions } from './options.js';
import type { RunResult } from './driver.js';
import type { RampReport } from './ramp.js';

/** The `--report` file: what was asked, then one run's figures or the whole ramp. */
export interface LoadReport {
  version: 1;
  started_at: string;
  finished_at: string;
  target: { urls: string[]; mix: LoadOptions['mix']; flag_keys: string[] | null; users: number; batch_size: number };
  load: { connections: number; rate: number | null; duration_s: number; workers: number; timeout_s: number };
  /** The run's figures (fixed run), or the last step's (ramp). */
  result: RunResult;
  ramp: RampReport | null;
}

/** Builds the report from the options, the run (or the ramp's) figures and the start time. */
export function buildReport(o: LoadOptions, startedAt: Date, result: RunResult, ramp: RampReport | null): LoadReport {
  return {
    version: 1, started_at: startedAt.toISOString(), finished_at: new Date().toISOString(),
    target: { urls: o.urls, mix: o.mix, flag_keys: o.flagKeys, users: o.users, batch_size: o.batchSize },
    load: { connections: o.connections, rate: o.rate, duration_s: o.durationS, workers: o.workers, timeout_s: o.timeoutS },
    result, ramp,
  };
}

/** One run as a few aligned lines: rate, latency percentiles, statuses and errors. */
export function formatRun(r: RunResult): string {
  const statuses = Object.entries(r.status).sort(([a], [b]) => Number(a) - Number(b)).map(([c, n]) => `${c}: ${n}`).join(', ') || 'none';
  const target = r.target_rps === null ? `${r.connections} connections` : `target ${r.target_rps} req/s over ${r.connections} connections`;
  return [
    `  ${r.requests} requests in ${r.duration_s} s (${target}, ${r.workers} generator process${r.workers === 1 ? '' : 'es'})`,
    `  throughput  ${r.rps} req/s`,
    `  latency     p50 ${r.latency_ms.p50} ms  p90 ${r.latency_ms.p90} ms  p99 ${r.latency_ms.p99} ms  max ${r.latency_ms.max} ms  mean ${r.latency_ms.mean} ms`,
    `  status      ${statuses}  (non-2xx: ${r.non_2xx})`,
    `  errors      connection ${r.errors.connection}, timeouts ${r.errors.timeouts}`,
  ].join('\n');
}

/** The ramp's closing lines: one per step, then the capacity. */
export function formatRamp(rp: RampReport): string {
  const steps = rp.steps.map((s) => `  step ${s.step}: ${s.result.target_rps} req/s → ${s.result.rps} req/s, p99 ${s.result.latency_ms.p99} ms, ` +
    `non-2xx ${s.result.non_2xx}, errors ${s.result.errors.connection + s.result.errors.timeouts}: ${s.passed ? 'pass' : `fail (${s.failure})`}`);
  const cap = rp.capacity
    ? `capacity: ${rp.capacity.target_rps} req/s (measured ${rp.capacity.rps} req/s, p99 ${rp.capacity.p99_ms} ms ≤ ${rp.slo_p99_ms} ms)`
    : `capacity: none — the first step already failed (${rp.stopped_by})`;
  const why = rp.stopped_by === 'max_steps' ? 'every step passed; raise --ramp-steps to go further' : `stopped by ${rp.stopped_by}`;
  return `${steps.join('\n')}\n${cap}; ${why}`;
}
