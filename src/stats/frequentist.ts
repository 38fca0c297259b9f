/**
 * Frequentist tests (research/experiments.md §4.2, §4.4; PostHog `stats/frequentist`,
 * GrowthBook `gbstats/frequentist`):
 *
 * - Welch's two-sided t-test: df = (a + b)²/(a²/(n_T − 1) + b²/(n_C − 1)) with a = v_T/n_T,
 *   b = v_C/n_C (raw arm variances even for relative effects); t = Δ/√V;
 *   p = 2·(1 − F_t(|t|; df)); CI = Δ ± F_t⁻¹(1 − α/2; df)·√V; significant when p < α.
 *   PostHog refuses fewer than 5 samples per arm.
 * - One-sided variants (GrowthBook's "greater" / "lesser"), offered as an option.
 * - Always-valid sequential test (Waudby-Smith et al. 2023, as PostHog and GrowthBook): with
 *   tuning N*, n = n_T + n_C, ρ = √((−2 ln α + ln(1 − 2 ln α))/N*), r = nρ² + 1, s² = V·n,
 *   half-width √s²·√(2r·ln(√r/α)/(nρ)²), log E = ρ²·(Δ²·n/V)/(2r) − ½ ln r, p = min(1, e^(−log E)).
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
}

/** Which alternative the test takes. */
export type Alternative = 'two-sided' | 'greater' | 'less';

/** Welch's t-test of effect `e` between arms `t` and `c`. @throws StatsError with too few samples. */
export function welch(e: Effect, t: Moments, c: Moments, alpha: number, alternative: Alternative = 'two-sided'): FrequentistResult {
  if (t.n < MIN_SAMPLES_PER_ARM || c.n < MIN_SAMPLES_PER_ARM) throw new StatsError(`Each arm needs at least ${MIN_SAMPLES_PER_ARM} samples.`);
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

/** Default tuning parameter N* of the sequential test (PostHog). */
export const DEFAULT_SEQUENTIAL_TUNING = 5000;

/** Always-valid two-sided sequential test. @throws StatsError without variance. */
export function sequential(e: Effect, t: Moments, c: Moments, alpha: number, tuning = DEFAULT_SEQUENTIAL_TUNING): FrequentistResult {
  if (!(e.variance > 0)) throw new StatsError('The effect has no variance.');
  if (!(tuning >= 1 && tuning <= 1e9)) throw new StatsError('sequential_tuning_parameter must be from 1 to 1e9.');
  const n = t.n + c.n;
  const rho = Math.sqrt((-2 * Math.log(alpha) + Math.log(1 - 2 * Math.log(alpha))) / tuning);
  const r = n * rho * rho + 1;
  const s2 = e.variance * n;
  const half = Math.sqrt(s2) * Math.sqrt((2 * r * Math.log(Math.sqrt(r) / alpha)) / (n * rho) ** 2);
  const logE = (rho * rho * ((e.delta * e.delta * n) / e.variance)) / (2 * r) - 0.5 * Math.log(r);
  const p = logE <= 0 ? 1 : Math.min(1, Math.exp(-logE));
  return {
    point_estimate: e.delta, standard_error: Math.sqrt(e.variance), p_value: p,
    confidence_interval: [e.delta - half, e.delta + half], significant: p < alpha, degrees_of_freedom: null,
  };
}
