/**
 * The capacity ramp of `switchyard load --ramp`: fixed-rate steps of rising rate, each judged
 * against the p99 objective. Step k (from 0) runs at ⌈start × factor^k⌉ req/s for the run's
 * duration; the ramp stops at the first step that fails or after `maxSteps` steps, and the
 * capacity is the last step that passed (null when the first one failed).
 *
 * A step fails, in this order of reasons, when it has requests without an answer (connection
 * errors, timeouts) or non-2xx answers (`errors`), when its p99 exceeds the objective (`slo`), or
 * when it answered fewer than {@link MIN_ACHIEVED} of its target rate (`rate`: the node, or the
 * connections, could not keep up, and latencies measured from each send would hide the queue).
 */
import type { RunResult } from './driver.js';

/** Share of the target rate a passing step must reach. */
export const MIN_ACHIEVED = 0.9;

/** Why a step failed. */
export type StepFailure = 'errors' | 'slo' | 'rate';

/** One judged step. */
export interface RampStep { step: number; passed: boolean; failure: StepFailure | null; result: RunResult }

/** The whole ramp: its steps, the capacity found and why it stopped. */
export interface RampReport {
  slo_p99_ms: number;
  factor: number;
  steps: RampStep[];
  /** The last passing step's figures, or null when none passed. */
  capacity: { target_rps: number; rps: number; p99_ms: number } | null;
  /** `max_steps` when every step passed, else the first failing step's reason. */
  stopped_by: StepFailure | 'max_steps';
}

/** The target rate of step k (req/s, whole). */
export function stepRate(start: number, factor: number, k: number): number {
  return Math.ceil(start * factor ** k);
}

/** The reason `r` fails the objective, or null when it passes (see the module doc for the order). */
export function judge(r: RunResult, sloP99Ms: number): StepFailure | null {
  if (r.errors.connection + r.errors.timeouts > 0 || r.non_2xx > 0) return 'errors';
  if (r.latency_ms.p99 > sloP99Ms) return 'slo';
  if (r.target_rps !== null && r.rps < r.target_rps * MIN_ACHIEVED) return 'rate';
  return null;
}

/**
 * Runs the ramp: `run(rate)` performs one fixed-rate step; `onStep` sees each judged step as it
 * ends (for progress output).
 */
export async function ramp(opts: { start: number; factor: number; maxSteps: number; sloP99Ms: number },
  run: (rate: number) => Promise<RunResult>, onStep: (s: RampStep) => void = () => {}): Promise<RampReport> {
  const steps: RampStep[] = [];
  let stoppedBy: RampReport['stopped_by'] = 'max_steps';
  for (let k = 0; k < opts.maxSteps; k++) {
    const result = await run(stepRate(opts.start, opts.factor, k));
    const failure = judge(result, opts.sloP99Ms);
    const step: RampStep = { step: k + 1, passed: failure === null, failure, result };
    steps.push(step);
    onStep(step);
    if (failure) { stoppedBy = failure; break; }
  }
  const last = steps.filter((s) => s.passed).pop();
  return {
    slo_p99_ms: opts.sloP99Ms, factor: opts.factor, steps, stopped_by: stoppedBy,
    capacity: last ? { target_rps: last.result.target_rps!, rps: last.result.rps, p99_ms: last.result.latency_ms.p99 } : null,
  };
}
