/**
 * Frequentist tests (research/experiments.md §4.2, §4.4; PostHog `stats/frequentist`,
 * GrowthBook `gbstats/frequentist`):
 *
 * - Welch's two-sided t-test: df = (a + b)²/(a²/(n_T − 1) + b²/(n_C − 1)) with a = v_T/n_T,
 *   b = v_C/n_C (raw arm variances even for relative effects); t = Δ/√V;
 *   p = 2·(1 − F_t(|t|; df)); CI = Δ ± F_t⁻¹(1 − α/2; df)·√V; significant when p < α.
 *   PostHog refuses fewer than 5 samples per arm.
 * - One-sided variants (GrowthBook's `OneSidedTreatmentGreaterTTest` / `…LesserTTest`):
 *   "greater" p = 1 − F_t(t), CI [Δ − F_t⁻¹(1 − α)·√V, +∞); "less" mirrored.
 * The always-valid sequential tests are in sequential.ts.
 */
import { tCdf, tQuantile } from './distributions.js';
import { StatsError, type Effect } from './effect.js';
import type { Moments } from './statistics.js';

/** Smallest sample per arm the t-test accepts (PostHog). */
export const MIN_SAMPLES_PER_ARM = 5;

/** Result of a frequentist comparison. */
export interface FrequentistResult {
  point_estimate: number;
  standard_error: number;
  p_value: number;
  confidence_interval: [number, number];
  significant: boolean;
  degrees_of_freedom: number | null;
  /** Set when a one-sided sequential p-value's search did not converge (GrowthBook's NUMERICAL_PVALUE_NOT_CONVERGED). */
  p_value_error?: string;
}

/** Which alternative the test takes. */
export type Alternative = 'two-sided' | 'greater' | 'less';

/** Welch's t-test of effect `e` between arms `t` and `c` (PostHog refuses arms under 5 samples; GrowthBook passes `minSamples` 0). @throws StatsError with too few samples. */
export function welch(e: Effect, t: Moments, c: Moments, alpha: number, alternative: Alternative = 'two-sided', minSamples = MIN_SAMPLES_PER_ARM): FrequentistResult {
  if (t.n < minSamples || c.n < minSamples) throw new StatsError(`Each arm needs at least ${minSamples} samples.`);
  if (!(e.variance > 0)) throw new StatsError('The effect has no variance.');
  const a = t.variance / t.n;
  const b = c.variance / c.n;
  const df = (a + b) ** 2 / (a ** 2 / (t.n - 1) + b ** 2 / (c.n - 1));
  const se = Math.sqrt(e.variance);
  const stat = e.delta / se;
  let p: number;
  let ci: [number, number];
  if (alternative === 'greater') {
    p = 1 - tCdf(stat, df);
    ci = [e.delta - tQuantile(1 - alpha, df) * se, Infinity];
  } else if (alternative === 'less') {
    p = tCdf(stat, df);
    ci = [-Infinity, e.delta + tQuantile(1 - alpha, df) * se];
  } else {
    p = 2 * (1 - tCdf(Math.abs(stat), df));
    const half = tQuantile(1 - alpha / 2, df) * se;
    ci = [e.delta - half, e.delta + half];
  }
  return { point_estimate: e.delta, standard_error: se, p_value: Math.min(1, Math.max(0, p)), confidence_interval: ci, significant: p < alpha, degrees_of_freedom: df };
}
