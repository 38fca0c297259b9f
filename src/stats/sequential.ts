/**
 * Always-valid sequential tests (Waudby-Smith et al. 2023; PostHog `stats/frequentist/utils.py`
 * and GrowthBook `gbstats/frequentist/tests.py`, research/experiments.md §4.4). With tuning
 * parameter N* (default 5000), n = n_T + n_C, effect Δ with variance V, s² = V·n:
 *
 * - two-sided: ρ = √((−2 ln α + ln(1 − 2 ln α))/N*), r = nρ² + 1,
 *   half-width √s²·√(2r·ln(√r/α)/(nρ)²); log E = ρ²·(Δ²·n/V)/(2r) − ½ ln r (computed in log
 *   space), p = min(1, e^(−log E));
 * - one-sided (GrowthBook only): ρ from 2α, half-width √(s²·2r/(nρ)²·ln(1 + √r/(2α))), interval
 *   [Δ − h, +∞) ("greater") or (−∞, Δ + h] ("less"); the p-value is the α at which the bound
 *   touches 0, found by bisection over [1e-5, 0.4999] with ρ held fixed (tolerance 1e-6, at most
 *   100 steps; 1e-5 and 0.4999 are GrowthBook's clamps); α ≥ 0.5 is refused.
 *
 * `rho` may be given instead of derived from N*. Significant when p < α.
 */
import { StatsError, type Effect } from './effect.js';
import type { Alternative, FrequentistResult } from './frequentist.js';
import type { Moments } from './statistics.js';

/** Default tuning parameter N* (PostHog and GrowthBook). */
export const DEFAULT_SEQUENTIAL_TUNING = 5000;

/** ρ for level `alpha` and tuning `tuning` (two-sided; one-sided uses 2α). */
export function sequentialRho(alpha: number, tuning: number, twoSided = true): number {
  const a = twoSided ? alpha : 2 * alpha;
  return Math.sqrt((-2 * Math.log(a) + Math.log(-2 * Math.log(a) + 1)) / tuning);
}

function twoSidedHalfWidth(s2: number, n: number, rho: number, alpha: number): number {
  const r = n * rho * rho + 1;
  return Math.sqrt(s2) * Math.sqrt((2 * r * Math.log(Math.sqrt(r) / alpha)) / (n * rho) ** 2);
}

function oneSidedHalfWidth(s2: number, n: number, rho: number, alpha: number): number {
  const r = n * rho * rho + 1;
  return Math.sqrt(((s2 * 2 * r) / (n * rho) ** 2) * Math.log(1 + Math.sqrt(r) / (2 * alpha)));
}

/** A sequential result: the frequentist fields plus the tuning parameter and ρ used. */
export type SequentialResult = FrequentistResult & { sequential_tuning_parameter: number; rho: number };

/** Options of {@link sequential}. */
export interface SequentialOptions { tuning?: number; rho?: number | null; alternative?: Alternative }

/** The sequential test of effect `e` between arms `t` and `c`. @throws StatsError without variance or with α ≥ 0.5 one-sided. */
export function sequential(e: Effect, t: Moments, c: Moments, alpha: number, opts: SequentialOptions = {}): SequentialResult {
  const tuning = opts.tuning ?? DEFAULT_SEQUENTIAL_TUNING;
  const alternative = opts.alternative ?? 'two-sided';
  if (!(e.variance > 0)) throw new StatsError('The effect has no variance.');
  if (!(tuning > 0)) throw new StatsError('sequential_tuning_parameter must be positive.');
  const twoSided = alternative === 'two-sided';
  if (!twoSided && alpha >= 0.5) throw new StatsError('A one-sided sequential test needs alpha below 0.5.');
  const rho = opts.rho ?? sequentialRho(alpha, tuning, twoSided);
  const n = t.n + c.n;
  const s2 = e.variance * n;
  const se = Math.sqrt(e.variance);
  const base = { point_estimate: e.delta, standard_error: se, degrees_of_freedom: null, sequential_tuning_parameter: tuning, rho };
  if (twoSided) {
    const half = twoSidedHalfWidth(s2, n, rho, alpha);
    const r = n * rho * rho + 1;
    const logE = (rho * rho * ((e.delta * e.delta * n) / e.variance)) / (2 * r) - 0.5 * Math.log(r);
    const p = logE <= 0 ? 1 : Math.min(1, Math.exp(-logE));
    return { ...base, p_value: p, confidence_interval: [e.delta - half, e.delta + half], significant: p < alpha };
  }
  const lesser = alternative === 'less';
  const bound = (a: number): number => (lesser ? e.delta + oneSidedHalfWidth(s2, n, rho, a) : e.delta - oneSidedHalfWidth(s2, n, rho, a));
  const ci: [number, number] = lesser ? [-Infinity, bound(alpha)] : [bound(alpha), Infinity];
  const p = oneSidedPValue(bound, lesser);
  if (p === null) return { ...base, p_value: null as unknown as number, confidence_interval: ci, significant: false, p_value_error: 'The one-sided sequential p-value search did not converge.' };
  return { ...base, p_value: p, confidence_interval: ci, significant: p < alpha };
}

/** GrowthBook's bisection for the α at which the one-sided bound crosses 0 (null if it does not converge). */
function oneSidedPValue(bound: (alpha: number) => number, lesser: boolean): number | null {
  const tol = 1e-6;
  let lo = 1e-5;
  let hi = 0.4999;
  const small = bound(lo);
  if (lesser ? small < 0 : small > 0) return lo;
  const big = bound(hi);
  if (lesser ? big > 0 : big < 0) return hi;
  let a = 0.5 * (lo + hi);
  let diff = 0;
  for (let i = 0; i < 100; i++) {
    diff = bound(a);
    if (lesser ? diff > 0 : diff < 0) lo = a;
    else hi = a;
    a = 0.5 * (lo + hi);
    if (Math.abs(diff) < tol) break;
  }
  return Math.abs(diff) < tol ? a : null;
}
